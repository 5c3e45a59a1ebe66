"""`FakeClock`: a `reconciler.clock.Clock` whose sleeps only move its own hands.

A workflow under test waits as it would for real (polls, deadlines, back-off), but each
`sleep` returns at once and adds to `now`; `sleeps` lists every wait asked for, so a test
can say "drain waited its whole 120 s bound" without spending it. `on_sleep` runs after
each sleep, so a test can change the world while the workflow waits (a request finishes,
a proxy comes up).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

EPOCH = 1_796_083_200.0  # 2026-12-01T00:00:00Z, what `wall` reads at `now` 0


@dataclass
class FakeClock:
    """A clock that starts at `now` and advances only when slept on."""

    now: float = 1000.0
    sleeps: list[float] = field(default_factory=list)
    on_sleep: Callable[[float], None] | None = None

    def monotonic(self) -> float:
        """The clock's current reading."""
        return self.now

    def sleep(self, seconds: float) -> None:
        """Advance the clock by `seconds` (at once) and record the wait."""
        self.sleeps.append(seconds)
        self.now += max(seconds, 0.0)
        if self.on_sleep is not None:
            self.on_sleep(self.now)

    def wall(self) -> float:
        """Seconds since the epoch: `EPOCH` + `now`."""
        return EPOCH + self.now

    def wait(self, event: threading.Event, seconds: float) -> bool:
        """Whether `event` is set; if not, sleep `seconds` first (on this clock)."""
        if not event.is_set():
            self.sleep(seconds)
        return event.is_set()

    @property
    def waited(self) -> float:
        """Seconds slept in all."""
        return sum(self.sleeps)
