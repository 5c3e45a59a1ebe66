"""What one cycle of the reconcile loop should do, decided from facts (pure).

Called by `reconciler.workflows.reconcile`. A new desired/ commit is applied with
`auto_apply`; drift without a new commit is restored with `self_heal`; a failing commit
is retried with exponential backoff up to its limit, then left alone until the next
commit; nothing changes while the fleet is suspended, inside a deny window, or while the
clone is dirty or diverged. The watchdog calls a seat stuck when requests have run or
waited without a token generated for `stuck_after` seconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from fleet.facts.engine_metrics import EngineLoad
from fleet.spec.models import DenyWindow, ReconcileSettings

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
BACKOFF_BASE, BACKOFF_CAP = 30.0, 1800.0


class Move(StrEnum):
    """What the cycle does."""

    NOTHING = "nothing"  # in sync
    OBSERVE_ONLY = "observe-only"  # changes pending but not allowed to make them
    APPLY = "apply"  # a new commit, with auto-apply
    HEAL = "heal"  # drift without a new commit, with self-heal
    WAIT = "wait"  # a failed commit's backoff has not passed
    GIVE_UP = "give-up"  # a commit failed every retry: left alone until the next


@dataclass(frozen=True)
class Attempts:
    """Failed applies of one desired/ commit."""

    commit: str
    failures: int
    last_failure: float


@dataclass(frozen=True)
class Decision:
    """The move and why."""

    move: Move
    reason: str


def deny_window(windows: tuple[DenyWindow, ...], now: datetime) -> DenyWindow | None:
    """The window `now` (UTC) falls in, if any; `end` before `start` runs past midnight."""
    minute = now.hour * 60 + now.minute
    day = DAYS[now.weekday()]
    yesterday = DAYS[(now - timedelta(days=1)).weekday()]
    for window in windows:
        start, end = _minutes(window.start), _minutes(window.end)
        if start <= end and day in window.days and start <= minute <= end:
            return window
        if start > end and (
            (day in window.days and minute >= start) or (yesterday in window.days and minute <= end)
        ):
            return window
    return None


def _minutes(text: str) -> int:
    hours, minutes = text.split(":")
    return int(hours) * 60 + int(minutes)


def backoff(failures: int, base: float = BACKOFF_BASE) -> float:
    """Seconds to wait after the n-th failure: base, twice it, four times, ... at most 30 min."""
    return float(min(base * 2.0 ** max(failures - 1, 0), BACKOFF_CAP))


def decide(
    *,
    pending: bool,
    new_commit: bool,
    settings: ReconcileSettings,
    now: datetime,
    clock: float,
    hold: str | None,
    auto_apply: bool,
    self_heal: bool,
    attempts: Attempts | None,
) -> Decision:
    """The cycle's move from what the plan found and what the loop may do."""
    if not pending:
        return Decision(Move.NOTHING, "the live fleet matches desired/")
    stop = hold or ("suspended in fleet.yaml" if settings.suspend else None)
    window = deny_window(settings.deny_windows, now)
    stop = stop or (f"inside a deny window {window.start}-{window.end} UTC" if window else None)
    if stop:
        return Decision(Move.OBSERVE_ONLY, f"changes pending, not made: {stop}")
    if attempts is not None and attempts.failures > settings.retries:
        return Decision(Move.GIVE_UP, f"{attempts.commit[:12]} failed {attempts.failures} times")
    pause = backoff(attempts.failures, settings.backoff) if attempts is not None else 0.0
    if attempts is not None and clock < attempts.last_failure + pause:
        wait = attempts.last_failure + pause - clock
        return Decision(Move.WAIT, f"retrying {attempts.commit[:12]} in {wait:.0f}s")
    if new_commit and auto_apply:
        return Decision(Move.APPLY, "desired/ moved to a new commit")
    if attempts is not None and auto_apply:
        return Decision(Move.APPLY, f"retrying {attempts.commit[:12]}")
    if not new_commit and self_heal:
        return Decision(Move.HEAL, "the live fleet drifted from desired/")
    return Decision(Move.OBSERVE_ONLY, "changes pending; no --auto-apply / --self-heal for them")


@dataclass(frozen=True)
class LoadSample:
    """One look at a seat's engine load, at a monotonic time."""

    at: float
    load: EngineLoad


def stuck(samples: list[LoadSample], stuck_after: float) -> bool:
    """Busy the whole time, no token generated, for at least `stuck_after` seconds."""
    if not samples or not samples[-1].load.busy or samples[-1].load.generated is None:
        return False
    latest = samples[-1]
    for sample in reversed(samples):
        if not sample.load.busy or sample.load.generated != latest.load.generated:
            return False
        if latest.at - sample.at >= stuck_after:
            return True
    return False
