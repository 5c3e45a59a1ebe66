"""The one way a test, the lab or a stand-in waits for something: poll a predicate until
it holds or a deadline passes.

A test that waits for an event waits for that event (the state it leads to), never a
fixed time: on a busy two-core machine a fixed sleep is either too short (the test fails)
or too long (the suite crawls). `poll` returns the predicate's first truthy value, or
None once `timeout` seconds passed (the predicate is asked once more at the deadline, so
a slow machine that reached the state just then still passes); `wait_until` raises with
what was awaited, and `detail()` (a log tail, the last answer) when given.

Both poll on a `reconciler.clock.Clock`: the real one by default; a test of code that
takes a clock hands the same `tests.fakes.clock.FakeClock`, so that the wait costs no
wall time and the deadline is the workflow's own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from reconciler.clock import SYSTEM_CLOCK, Clock

T = TypeVar("T")


def poll(
    check: Callable[[], T], timeout: float, *, interval: float = 0.1, clock: Clock = SYSTEM_CLOCK
) -> T | None:
    """`check()`'s first truthy value, polled every `interval` s; None after `timeout` s."""
    deadline = clock.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        left = deadline - clock.monotonic()
        if left <= 0:
            return None
        clock.sleep(min(interval, left))


def wait_until(
    check: Callable[[], T],
    timeout: float,
    what: str,
    *,
    interval: float = 0.1,
    clock: Clock = SYSTEM_CLOCK,
    error: Callable[[str], Exception] = AssertionError,
    detail: Callable[[], str] | None = None,
) -> T:
    """`check()`'s first truthy value; `error` ("timed out after N s waiting for <what>",
    then `detail()`) when none came within `timeout` s."""
    found = poll(check, timeout, interval=interval, clock=clock)
    if found:
        return found
    message = f"timed out after {timeout:.0f}s waiting for {what}"
    raise error(f"{message}:\n{detail()}" if detail is not None else message)
