"""The waiting helper (tests/waiting.py) on a fake clock: it returns what the predicate
found, asks once more at the deadline, and says what it waited for when it gives up."""

from __future__ import annotations

import pytest

from tests.fakes.clock import FakeClock
from tests.waiting import poll, wait_until


def test_returns_the_first_truthy_value_without_waiting_longer() -> None:
    clock = FakeClock()
    answers = iter([None, [], ["ready"], ["later"]])
    assert poll(lambda: next(answers), 10, interval=0.5, clock=clock) == ["ready"]
    assert clock.sleeps == [0.5, 0.5]


def test_asks_once_more_at_the_deadline() -> None:
    clock = FakeClock()
    assert poll(lambda: clock.now >= 1003, 3, interval=2, clock=clock) is True
    assert clock.sleeps == [2, 1]


def test_gives_up_after_the_timeout_saying_what_it_waited_for() -> None:
    clock = FakeClock()
    with pytest.raises(LookupError, match=r"^timed out after 30s waiting for sshd of tower:\nlog"):
        wait_until(
            lambda: False, 30, "sshd of tower", clock=clock, error=LookupError, detail=lambda: "log"
        )
    assert clock.waited == pytest.approx(30)
