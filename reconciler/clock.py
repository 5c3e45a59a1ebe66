"""Time as the workflows' waits see it: a clock they are handed, never the module `time`.

Every wait of apply, drain and gateway verification polls through a `Clock`, so unit tests
hand them `tests.fakes.clock.FakeClock` (kopf's looptime idea): a wait of 120 s runs in
microseconds, and a test asserts how long the workflow *would* have waited. The command
line and the reconcile loop use `SYSTEM_CLOCK`.

This module sits beside the layers, like `reconciler.host`: it imports only the standard
library.
"""

from __future__ import annotations

import threading
import time
from typing import Protocol


class Clock(Protocol):
    """A monotonic clock and a way to wait on it."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back."""
        ...

    def sleep(self, seconds: float) -> None:
        """Wait `seconds` on this clock."""
        ...

    def wall(self) -> float:
        """Seconds since the epoch (timestamps in events, metrics and deny windows)."""
        ...

    def wait(self, event: threading.Event, seconds: float) -> bool:
        """Wait until `event` is set or `seconds` pass on this clock; whether it is set."""
        ...


class SystemClock:
    """The real clock: `time.monotonic` and `time.sleep`."""

    def monotonic(self) -> float:
        """Seconds since an arbitrary start, never going back."""
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        """Block the calling thread for `seconds`."""
        time.sleep(max(seconds, 0.0))

    def wall(self) -> float:
        """`time.time()`."""
        return time.time()

    def wait(self, event: threading.Event, seconds: float) -> bool:
        """`event.wait(seconds)`: a stop request ends the wait at once."""
        return event.wait(max(seconds, 0.0))


SYSTEM_CLOCK: Clock = SystemClock()
