"""After a surge a seat serves on its second port: plan reads which port is live, so it
is 0 after the surge, the next change surges back, and a systemd seat is replaced as a
compose seat is."""

from __future__ import annotations

import pytest

from fleet.observed.models import Observation
from fleet.plan.live_port import as_planned, declared, follow_live_ports
from fleet.plan.plan import make_plan
from fleet.runtimes.compose import render_compose
from fleet.spec.models import DesiredFleet
from tests.unit.plan.fakes import in_sync, live_seat
from tests.unit.render.test_compose import example, on_systemd

DESIRED = example()


def running(live: DesiredFleet) -> Observation:
    """The fleet in sync with `live`, each seat's engine on the port `live` gives it."""
    observed = in_sync(live)
    tower = observed.hosts["tower"]
    seats = tuple(
        live_seat(live, live.seats[s.name], port=str(live.seats[s.name].port))
        if s.name in live.live_on_second
        else s
        for s in tower.seats
    )
    hosts = {**observed.hosts, "tower": tower.model_copy(update={"seats": seats})}
    return observed.model_copy(update={"hosts": hosts})


@pytest.mark.parametrize(
    ("live", "ports"),
    [
        (DESIRED, {"coder": (8030, 9030), "flash": (8026, 9026)}),
        (DESIRED.flipped("coder"), {"coder": (9030, 8030), "flash": (8026, 9026)}),
        (
            DESIRED.flipped("coder").flipped("flash"),
            {"coder": (9030, 8030), "flash": (9026, 8026)},
        ),
    ],
    ids=["as-declared", "coder-surged", "both-surged"],
)
def test_each_seat_follows_the_port_its_live_copy_serves_on(
    live: DesiredFleet, ports: dict[str, tuple[int, int]]
) -> None:
    followed = follow_live_ports(DESIRED, running(live))
    assert {s: (followed.seats[s].port, followed.seats[s].second_port) for s in ports} == ports
    assert follow_live_ports(followed, running(live)) == followed  # from either side
    ports_of = {n: (s.port, s.second_port) for n, s in DESIRED.seats.items()}
    assert {n: (s.port, s.second_port) for n, s in declared(followed).seats.items()} == ports_of
    assert as_planned(DESIRED, tuple(sorted(followed.live_on_second))) == followed
    assert make_plan(DESIRED, running(live)).actions == (), "plan is 0 after a surge"


def test_the_second_copy_is_its_own_compose_service() -> None:
    text = render_compose(DESIRED.flipped("coder"), "tower")
    assert "\n  coder-b:\n" in text and "\n  coder:\n" not in text
    assert "127.0.0.11:9030:9030" in text
    assert DESIRED.flipped("coder").flipped("coder").instance_name("coder") == "coder"


def test_a_changed_seat_surges_back_to_its_first_port() -> None:
    changed = example({"seats/coder.yaml": ("context: 2048", "context: 4096")})
    plan = make_plan(changed, running(DESIRED.flipped("coder")))
    (action,) = [a for a in plan.actions if a.target == "coder" and a.wave == 1]
    assert action.strategy == "surge"
    assert plan.live_on_second == ("coder",)
    assert as_planned(changed, plan.live_on_second).seats["coder"].second_port == 8030


@pytest.mark.parametrize(
    ("pin", "strategy"),
    [("", "surge"), ("\nstrategy: surge", "surge"), ("\nstrategy: recreate", "recreate")],
    ids=["auto-surges-where-both-fit", "pinned-surge", "pinned-recreate"],
)
def test_a_systemd_seat_is_replaced_as_a_compose_seat_is(pin: str, strategy: str) -> None:
    # issue 22: surge applies to systemd hosts too (a second unit on the second port), so a
    # systemd seat no longer always recreates: plan chooses as it does for compose
    systemd = on_systemd("tower")
    change = {"seats/coder.yaml": ("context: 2048", f"context: 4096{pin}")}
    lines = []
    for runtime in ({}, systemd):
        plan = make_plan(example({**runtime, **change}), in_sync(example(runtime)))
        (action,) = [a for a in plan.actions if a.target == "coder" and a.wave == 1]
        assert action.strategy == strategy
        assert [b.message for b in plan.blockers if b.target == "coder"] == []
        lines.append(action.strategy_line)
    assert lines[0] == lines[1], "the same choice, for the same reason, on either runtime"
