"""How plan replaces a changed seat: surge where its GPUs hold both copies, recreate where
they do not (or desired/ says so), and what a recreate takes away, with the numbers."""

from __future__ import annotations

import pytest

from fleet.facts.journal import last_seat_starts
from fleet.observed.models import Observation
from fleet.plan.actions import Action, ActionKind
from fleet.plan.plan import make_plan
from fleet.spec.models import DesiredFleet
from tests.unit.plan.fakes import in_sync
from tests.unit.render.test_compose import example

CHANGES = {
    "char-rp": ("context: 131072", "context: 65536"),
    "coder": ("context: 2048", "context: 4096"),
    "flash": ("context: 65536", "context: 32768"),
}


def replaced(
    seat: str, extra: str = "", observed: Observation | None = None, seconds: float | None = None
) -> Action:
    """The replace action of one seat whose context changed (plus `extra` lines)."""
    old, new = CHANGES[seat]
    fleet = example({f"seats/{seat}.yaml": (old, new + extra)})
    observation = observed or in_sync(example())
    if seconds is not None:
        tower = observation.hosts["tower"].model_copy(
            update={"seat_start_seconds": {seat: seconds}}
        )
        observation = observation.model_copy(
            update={"hosts": {**observation.hosts, "tower": tower}}
        )
    (action,) = [
        a for a in make_plan(fleet, observation).actions if a.target == seat and a.wave == 1
    ]
    assert action.kind is ActionKind.REPLACE_SEAT
    return action


def stopped(fleet: DesiredFleet, seat: str) -> Observation:
    observed = in_sync(fleet)
    tower = observed.hosts["tower"]
    seats = tuple(
        s.model_copy(update={"instance": s.instance.model_copy(update={"state": "exited"})})
        if s.name == seat
        else s
        for s in tower.seats
    )
    hosts = {**observed.hosts, "tower": tower.model_copy(update={"seats": seats})}
    return observed.model_copy(update={"hosts": hosts})


def unweighed(fleet: DesiredFleet) -> Observation:
    """Tower's model sizes unread and no engine report: a KV seat's weights are not known."""
    observed = in_sync(fleet)
    tower = observed.hosts["tower"]
    seats = tuple(s.model_copy(update={"engine": None}) for s in tower.seats)
    tower = tower.model_copy(update={"models": {}, "seats": seats})
    return observed.model_copy(update={"hosts": {**observed.hosts, "tower": tower}})


@pytest.mark.parametrize(
    ("seat", "extra", "observed", "seconds", "how", "line"),
    [
        (
            "coder",
            "",
            None,
            None,
            "surge",
            "seat coder: surge (GPU 0 has 37.6 GiB free beside the running copy; "
            "the new one needs 1.9 GiB)",
        ),
        (
            "char-rp",
            "",
            None,
            74.2,
            "recreate",
            "seat char-rp: recreate (GPU 1 has 43.1 GiB free; a second copy needs 76.5 GiB); "
            "char-rp, roleplay unavailable while it loads (last start took 74 s)",
        ),
        (
            "char-rp",
            "",
            None,
            None,
            "recreate",
            "seat char-rp: recreate (GPU 1 has 43.1 GiB free; a second copy needs 76.5 GiB); "
            "char-rp, roleplay unavailable while it loads",
        ),
        (
            "flash",
            "\nstrategy: recreate",
            None,
            31.0,
            "recreate",
            "seat flash: recreate (strategy: recreate in desired/); flash, summarizer "
            "unavailable while it loads (last start took 31 s)",
        ),
        (
            "char-rp",
            "\nstrategy: surge",
            None,
            None,
            "surge",
            "seat char-rp: surge (strategy: surge in desired/)",
        ),
        (
            "flash",
            "",
            unweighed(example()),
            None,
            "recreate",
            "seat flash: recreate (the memory a second copy needs is not known); flash, "
            "summarizer unavailable while it loads",
        ),
        (
            "flash",
            "",
            stopped(example(), "flash"),
            None,
            "recreate",
            "seat flash: recreate (nothing serves now)",
        ),
    ],
    ids=[
        "room-surges",
        "no-room-recreates",
        "never-timed",
        "pinned-recreate",
        "pinned-surge",
        "weights-unknown",
        "not-running",
    ],
)
def test_plan_says_how_a_seat_is_replaced_and_what_it_costs(
    seat: str,
    extra: str,
    observed: Observation | None,
    seconds: float | None,
    how: str,
    line: str,
) -> None:
    action = replaced(seat, extra, observed, seconds)
    assert action.strategy == how
    assert action.strategy_line == line


def test_plan_json_carries_strategy_and_downtime() -> None:
    surge = replaced("coder").model_dump(mode="json")
    recreate = replaced("char-rp", seconds=74.2).model_dump(mode="json")
    assert (surge["strategy"], surge["downtime"]) == ("surge", None)
    assert recreate["strategy"] == "recreate"
    assert recreate["downtime"] == {"aliases": ["char-rp", "roleplay"], "last_start_seconds": 74.2}


def test_a_surge_counts_the_old_copy_and_every_other_seat_on_the_gpu() -> None:
    """Coder surges beside sec on GPU 0; a bigger sec leaves no room for a second coder."""
    fleet = example({"seats/sec.yaml": ("kv_cache_bytes: 22GiB", "kv_cache_bytes: 60GiB")})
    observed = in_sync(fleet)
    coder = example({"seats/coder.yaml": CHANGES["coder"]}).seats["coder"]
    bigger = fleet.model_copy(update={"seats": {**fleet.seats, "coder": coder}})
    (action,) = [
        a for a in make_plan(bigger, observed).actions if a.target == "coder" and a.wave == 1
    ]
    assert action.strategy == "recreate"
    assert (action.strategy_line or "").startswith("seat coder: recreate (GPU 0 has 0.0 GiB free; ")


@pytest.mark.parametrize(
    ("journal", "starts"),
    [
        ("", {}),
        ('{"step": "replace-seat", "target": "coder"}\n', {}),
        (
            '{"step": "create-seat", "target": "coder", "seconds": "12.5"}\nnot json\n'
            '{"step": "replace-seat", "target": "coder", "seconds": "74.0"}\n'
            '{"step": "surge-seat", "target": "flash", "seconds": "30.1"}\n',
            {"coder": 74.0, "flash": 30.1},
        ),
        ('{"step": "replace-seat", "target": "coder", "seconds": "soon"}\n', {}),
    ],
    ids=["empty", "untimed", "newest-wins", "unreadable"],
)
def test_the_journal_keeps_each_seats_last_start(journal: str, starts: dict[str, float]) -> None:
    assert last_seat_starts(journal) == starts
