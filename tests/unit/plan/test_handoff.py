"""Which aliases a recreate hands to a fallback while it loads, and what plan says of it.

The example fleet declares `fallbacks: {sec: [chat]}` behind a front; sec (pinned to
`strategy: recreate`) changes. A fallback serves only when its seat runs, answers the
gateway's probe, and is untouched by the same plan; `handoff: false` refuses.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fleet.observed.models import BackendProbe, Observation
from fleet.plan.actions import Action
from fleet.plan.plan import make_plan
from fleet.spec.models import DesiredFleet
from tests.unit.plan.fakes import in_sync
from tests.unit.render.test_compose import DESIRED, example

SEC = ("context: 262144", "context: 131072\nstrategy: recreate")
FALLBACKS = "fallbacks:\n  sec: [chat]\n"
Edit = Callable[[Observation], Observation]
RECREATE = "seat sec: recreate (strategy: recreate in desired/); "


def with_seat_state(seat: str, state: str) -> Edit:
    def edit(observed: Observation) -> Observation:
        tower = observed.hosts["tower"]
        seats = tuple(
            s.model_copy(update={"instance": s.instance.model_copy(update={"state": state})})
            if s.name == seat
            else s
            for s in tower.seats
        )
        hosts = {**observed.hosts, "tower": tower.model_copy(update={"seats": seats})}
        return observed.model_copy(update={"hosts": hosts})

    return edit


def dead_backend(port: int) -> Edit:
    def edit(observed: Observation) -> Observation:
        gateway = observed.gateway
        assert gateway is not None
        probes = {
            base: BackendProbe(api_base=base, answers=False, error="connection refused")
            if f":{port}/" in base
            else probe
            for base, probe in gateway.probes.items()
        }
        return observed.model_copy(
            update={"gateway": gateway.model_copy(update={"probes": probes})}
        )

    return edit


def timed(seconds: float) -> Edit:
    def edit(observed: Observation) -> Observation:
        tower = observed.hosts["tower"].model_copy(update={"seat_start_seconds": {"sec": seconds}})
        return observed.model_copy(update={"hosts": {**observed.hosts, "tower": tower}})

    return edit


def sec_action(edits: dict[str, tuple[str, str]], *observed_edits: Edit) -> Action:
    """The replace of sec, planned against the fleet in sync before the edits."""
    before = example({k: v for k, v in edits.items() if k == "gateway.yaml"})
    fleet: DesiredFleet = example({"seats/sec.yaml": SEC, **edits})
    observation = in_sync(before)
    for edit in observed_edits:
        observation = edit(observation)
    (action,) = [
        a for a in make_plan(fleet, observation).actions if a.target == "sec" and a.wave == 1
    ]
    return action


def gateway_edit(new: str) -> dict[str, tuple[str, str]]:
    return {"gateway.yaml": (FALLBACKS, new)}


GATEWAY = (DESIRED / "gateway.yaml").read_text()
NO_FRONT = {"gateway.yaml": (GATEWAY[GATEWAY.index("\nfront:") + 1 :], "")}


@pytest.mark.parametrize(
    ("edits", "observed", "line", "handed"),
    [
        (
            {},
            (timed(74.2),),
            "sec served by chat while it loads (last start took 74 s); sec-reasoning unavailable",
            {"sec": ("chat", "reason")},
        ),
        (
            gateway_edit("fallbacks:\n  sec: [chat]\n  sec-reasoning: [chat]\n"),
            (),
            "sec, sec-reasoning served by chat while it loads",
            {"sec": ("chat", "reason"), "sec-reasoning": ("chat", "reason")},
        ),
        (
            gateway_edit("fallbacks:\n  sec: [chat]\n  sec-reasoning: [roleplay]\n"),
            (),
            "sec served by chat and sec-reasoning served by roleplay while it loads",
            {"sec": ("chat", "reason"), "sec-reasoning": ("roleplay", "char-rp")},
        ),
        (
            gateway_edit("fallbacks:\n  sec: [roleplay, chat]\n"),
            (with_seat_state("char-rp", "exited"),),
            "sec served by chat while it loads; sec-reasoning unavailable",
            {"sec": ("chat", "reason")},
        ),
        (
            {"seats/sec.yaml": SEC, "seats/reason.yaml": ("aliases:", "handoff: true\naliases:")},
            (),
            "sec served by chat while it loads; sec-reasoning unavailable",
            {"sec": ("chat", "reason")},
        ),
        (
            {"seats/sec.yaml": (SEC[0], SEC[1] + "\nhandoff: false")},
            (timed(74.2),),
            "sec, sec-reasoning unavailable while it loads (last start took 74 s)",
            {},
        ),
        (
            {},
            (with_seat_state("reason", "exited"),),
            "sec, sec-reasoning unavailable while it loads",
            {},
        ),
        (
            {},
            (dead_backend(8015),),
            "sec, sec-reasoning unavailable while it loads",
            {},
        ),
        (
            {"seats/reason.yaml": ("context: 40960", "context: 32768")},
            (),
            "sec, sec-reasoning unavailable while it loads",
            {},
        ),
        (
            NO_FRONT,
            (),
            "sec, sec-reasoning unavailable while it loads (no handoff: the gateway has "
            "no front, so it would restart in place)",
            {},
        ),
    ],
    ids=[
        "fallback-healthy",
        "both-aliases",
        "two-fallbacks",
        "first-fallback-down-next-serves",
        "handoff-true-is-the-default",
        "handoff-false-refuses",
        "fallback-seat-stopped",
        "fallback-not-answering",
        "fallback-seat-changes-too",
        "no-front",
    ],
)
def test_plan_says_which_aliases_are_handed_off_and_which_go_down(
    edits: dict[str, tuple[str, str]],
    observed: tuple[Edit, ...],
    line: str,
    handed: dict[str, tuple[str, str]],
) -> None:
    action = sec_action(edits, *observed)
    assert action.strategy_line == RECREATE + line
    assert {h.alias: (h.fallback, h.seat) for h in action.handoffs} == handed
    assert action.downtime is not None
    down = {"sec", "sec-reasoning"} - set(handed)
    assert set(action.downtime.aliases) == down


def test_plan_json_carries_each_alias_handed_off_or_down() -> None:
    dumped = sec_action({}, timed(74.2)).model_dump(mode="json")
    assert dumped["handoffs"] == [{"alias": "sec", "fallback": "chat", "seat": "reason"}]
    assert dumped["downtime"] == {"aliases": ["sec-reasoning"], "last_start_seconds": 74.2}
