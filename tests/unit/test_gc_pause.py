"""fleet.gc_pause: the cycle collector is off while a step runs, and as it was after."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from fleet.gc_pause import paused


@pytest.fixture
def collector() -> Iterator[None]:
    """The collector's state put back after the test, whatever it did."""
    was = gc.isenabled()
    yield
    (gc.enable if was else gc.disable)()


@pytest.mark.parametrize("before", [True, False], ids=["on-before", "off-before"])
def test_off_inside_and_as_it_was_after(collector: None, before: bool) -> None:
    (gc.enable if before else gc.disable)()
    with paused():
        assert not gc.isenabled()
    assert gc.isenabled() is before


def test_nested_pauses_restore_it_once_after_the_outer(collector: None) -> None:
    gc.enable()
    with paused():
        with paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer step still runs
    assert gc.isenabled()


def test_an_error_in_the_step_still_restores_it(collector: None) -> None:
    gc.enable()
    with pytest.raises(ValueError), paused():
        raise ValueError("the step failed")
    assert gc.isenabled()
