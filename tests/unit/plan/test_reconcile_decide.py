"""The reconcile loop's decisions, deny windows, backoff and the stuck-engine watchdog."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from fleet.engines import engine_load
from fleet.facts.engine_metrics import EngineLoad
from fleet.plan.reconcile import Attempts, LoadSample, Move, backoff, decide, deny_window, stuck
from fleet.spec.models import DenyWindow, ReconcileSettings

SATURDAY_NIGHT = datetime(2026, 12, 5, 23, 30, tzinfo=UTC)  # a Saturday
SUNDAY_EARLY = datetime(2026, 12, 6, 5, 0, tzinfo=UTC)
MONDAY_NOON = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)
NIGHTS = (DenyWindow(days=("sat",), start="22:00", end="06:00"),)


@pytest.mark.parametrize(
    ("now", "inside"),
    [(SATURDAY_NIGHT, True), (SUNDAY_EARLY, True), (MONDAY_NOON, False)],
    ids=["before-midnight", "past-midnight", "outside"],
)
def test_deny_windows(now: datetime, inside: bool) -> None:
    assert (deny_window(NIGHTS, now) is not None) is inside


CASES = [
    ("in-sync", {"pending": False}, Move.NOTHING),
    ("new-commit-auto-apply", {"new_commit": True, "auto_apply": True}, Move.APPLY),
    ("new-commit-without-auto-apply", {"new_commit": True}, Move.OBSERVE_ONLY),
    ("drift-self-heal", {"self_heal": True}, Move.HEAL),
    ("drift-without-self-heal", {}, Move.OBSERVE_ONLY),
    ("suspended", {"new_commit": True, "auto_apply": True, "suspend": True}, Move.OBSERVE_ONLY),
    ("deny-window", {"self_heal": True, "now": SATURDAY_NIGHT}, Move.OBSERVE_ONLY),
    ("dirty-clone", {"self_heal": True, "hold": "the clone has local changes"}, Move.OBSERVE_ONLY),
    (
        "backoff",
        {"auto_apply": True, "attempts": Attempts("abc", 1, 100.0), "clock": 110.0},
        Move.WAIT,
    ),
    (
        "retry",
        {"auto_apply": True, "attempts": Attempts("abc", 1, 100.0), "clock": 131.0},
        Move.APPLY,
    ),
    (
        "give-up",
        {"auto_apply": True, "attempts": Attempts("abc", 4, 0.0), "clock": 1e9},
        Move.GIVE_UP,
    ),
]


@pytest.mark.parametrize(("facts", "move"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_decisions(facts: dict[str, object], move: Move) -> None:
    settings = ReconcileSettings(suspend=bool(facts.pop("suspend", False)), deny_windows=NIGHTS)
    given: dict[str, object] = {
        "pending": True,
        "new_commit": False,
        "settings": settings,
        "now": MONDAY_NOON,
        "clock": 0.0,
        "hold": None,
        "auto_apply": False,
        "self_heal": False,
        "attempts": None,
    }
    assert decide(**{**given, **facts}).move is move  # type: ignore[arg-type]


def test_backoff_doubles_up_to_a_cap() -> None:
    assert [backoff(n) for n in (1, 2, 3)] == [30.0, 60.0, 120.0] and backoff(20) == 1800.0


def load(running: float, generated: float) -> EngineLoad:
    return EngineLoad(running=running, waiting=0.0, generated=generated)


@pytest.mark.parametrize(
    ("samples", "verdict"),
    [
        ([(0, load(2, 100)), (60, load(2, 100)), (130, load(2, 100))], True),
        ([(0, load(2, 100)), (60, load(2, 150)), (130, load(2, 150))], False),
        ([(0, load(0, 100)), (130, load(0, 100))], False),
        ([(0, load(2, 100)), (60, load(2, 100))], False),
    ],
    ids=["busy-no-tokens", "tokens-flow", "idle", "not-long-enough"],
)
def test_stuck(samples: list[tuple[float, EngineLoad]], verdict: bool) -> None:
    assert stuck([LoadSample(at, seen) for at, seen in samples], stuck_after=120) is verdict


def test_engine_metrics_of_both_engines() -> None:
    vllm = (
        '# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name="a"} 2.0\n'
        'vllm:num_requests_waiting{model_name="a"} 1.0\n'
        'vllm:generation_tokens_total{model_name="a"} 12345.0\n'
    )
    assert engine_load(vllm) == EngineLoad(running=2.0, waiting=1.0, generated=12345.0)
    llama = (
        "llamacpp:requests_processing 1\nllamacpp:requests_deferred 0\n"
        "llamacpp:tokens_predicted_total 77\n"
    )
    assert engine_load(llama) == EngineLoad(running=1.0, waiting=0.0, generated=77.0)
    assert engine_load("garbage") == EngineLoad()
