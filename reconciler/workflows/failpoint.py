"""Named fault points at apply's step boundaries, armed only by tests (etcd's gofail).

`hit("gateway.front_switched")` does nothing unless the environment variable
`FLEET_FAILPOINT` names that point (`after:gateway.front_switched`; several separated by
commas); then the process kills itself with SIGKILL on the spot, as a power cut or an
OOM kill would: no `finally`, no rollback, no lock released. Tests arm it to crash an
apply at every boundary of a surge, a recreate and a blue/green switch and prove that the
next apply (or loop cycle) converges. In-process tests replace `die` with a function that
raises `Crash`, which `except Exception` does not catch, so nothing runs that a killed
process would not run either.

The points (`POINTS`) are the boundaries apply records in its journal: a seat's new copy
started, healthy, aliases moved, old copy removed; a recreate's aliases handed to their
fallbacks and back; the gateway's config written, new proxy
verified, front switched, old proxy stopped.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable

ENV = "FLEET_FAILPOINT"
POINTS = (
    "locks.taken",
    "seat.written",
    "handoff.moved",
    "seat.started",
    "seat.healthy",
    "handoff.back",
    "surge.started",
    "surge.healthy",
    "surge.aliases_moved",
    "surge.old_removed",
    "gateway.config_written",
    "gateway.proxy_started",
    "gateway.proxy_verified",
    "gateway.front_switched",
    "gateway.old_stopped",
    "removals.removed",
    "apply.finished",
)


class Crash(BaseException):
    """What a test's `die` raises: the process is gone from here on."""


def _kill(point: str) -> None:
    print(f"failpoint {point}: killing this process", file=sys.stderr, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)


die: Callable[[str], None] = _kill


def armed() -> frozenset[str]:
    """The points `FLEET_FAILPOINT` names (empty when unset)."""
    spec = os.environ.get(ENV, "")
    return frozenset(
        item.strip().removeprefix("after:") for item in spec.split(",") if item.strip()
    )


def hit(point: str) -> None:
    """Die here if a test armed this point; else nothing."""
    assert point in POINTS, f"unknown failpoint {point}"
    if point in armed():
        die(point)
