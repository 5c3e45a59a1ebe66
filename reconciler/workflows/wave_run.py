"""What the threads of one seat wave share: the reporter, the undo record, the stop flag.

`reconciler.workflows.seat_wave` runs each host's seats in a thread of its own; a
recreate (seat_wave) and a surge (`reconciler.workflows.surge`) of a seat both run on a
`WaveRun`, record in its `Undo` what rollback puts back, and stop at their next step once
another host failed or a signal came (`check_stop`).
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from fleet.errors import FleetError
from fleet.spec.models import DesiredFleet
from reconciler.clock import SYSTEM_CLOCK, Clock
from reconciler.host import Sessions
from reconciler.runtimes.base import Snapshot
from reconciler.workflows.interrupt import Interrupt


class Reporter(Protocol):
    """Where apply says what it does."""

    def step(self, message: str) -> None: ...

    def waiting(self, reason: str, seconds: float) -> None: ...


@dataclass
class Undo:
    """What apply changed so far, to put back on failure (per host)."""

    definitions: dict[str, Snapshot] = field(default_factory=dict)  # each host runtime's
    created: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    replaced: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    adopted: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    gateway_previous: str | None = None
    surged: list[str] = field(default_factory=list)  # seats now live on their other port
    handed: list[str] = field(default_factory=list)  # seats whose aliases are on fallbacks
    handed_back: list[str] = field(default_factory=list)  # seats whose handoff is over


class Cancelled(FleetError):
    """Another host's seat failed, so this host stopped before its next step."""


class SerialReporter:
    """A reporter several host threads can share: one line at a time."""

    def __init__(self, reporter: Reporter) -> None:
        self.reporter = reporter
        self.lock = threading.Lock()

    def step(self, message: str) -> None:
        with self.lock:
            self.reporter.step(message)

    def waiting(self, reason: str, seconds: float) -> None:
        with self.lock:
            self.reporter.waiting(reason, seconds)


@dataclass(frozen=True)
class WaveRun:
    """What every host's thread shares."""

    desired: DesiredFleet
    sessions: Sessions
    seat_timeout: float
    reporter: SerialReporter
    undo: Undo
    stop: threading.Event
    clock: Clock = SYSTEM_CLOCK
    interrupt: Interrupt | None = None
    drain_timeout: float = 120.0
    gateway_timeout: float = 120.0
    gateway_lock: threading.Lock = field(default_factory=threading.Lock)  # one switch at a time


def waiting_for(run: WaveRun, host: str) -> Callable[[str, float], None]:
    """The health gate's progress callback for one host (it stops there too)."""

    def waiting(reason: str, seconds: float) -> None:
        check_stop(run, host)
        run.reporter.waiting(f"{host}: {reason}", seconds)

    return waiting


def check_stop(run: WaveRun, host: str) -> None:
    """Raise if a signal came or another host failed."""
    if run.interrupt is not None:
        run.interrupt.check(f"{host}'s seat step")
    if run.stop.is_set():
        raise Cancelled(f"{host} stopped: another host's seat failed")
