"""A pause of Python's cycle collector while a pure step builds many acyclic objects.

The collector runs after every few hundred allocations and, now and then, walks every
object alive: at 5,000 seats, plan's own allocations set off collections that walked the
desired fleet and the observation again and again (a quarter of plan's time, gaining
nothing: what plan builds holds no cycles, and reference counting frees it). `paused()`
turns the collector off for the step and back on after it, if it was on; nested and
concurrent pauses (observe reads hosts in threads) restore it once, after the last one.
Used by `fleet.plan.plan.make_plan` and `fleet.yaml_reader.read_yaml`.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_held = 0  # pauses under way
_restore = False  # whether the collector was on when the first of them began


@contextmanager
def paused() -> Iterator[None]:
    """The collector off while the block runs (then as it was before the first pause)."""
    global _held, _restore
    with _lock:
        if _held == 0:
            _restore = gc.isenabled()
            gc.disable()
        _held += 1
    try:
        yield
    finally:
        with _lock:
            _held -= 1
            if _held == 0 and _restore:
                gc.enable()
