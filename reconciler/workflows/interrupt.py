"""SIGTERM and SIGINT during an apply: a flag its steps look at, never an exception thrown
into the middle of a step.

`catching_signals` (used by `fleet apply`) turns both signals into `Interrupt.trip`; the
seat wave looks at the flag between seats and at every poll of a health gate (the seat
then fails its step, and apply rolls back what it changed, as on any failure), and apply
looks at it before each later wave (the gateway, removals), where it stops with the seat
wave done. Either way apply raises `fleet.errors.Interrupted` after releasing its locks,
and the command line commits the inventory and exits 128 + the signal's number.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

from fleet.errors import Interrupted

SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Interrupt:
    """Whether (and by which signal) the apply was asked to stop; safe across threads."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.signal_number = 0

    def trip(self, signal_number: int) -> None:
        """Ask the apply to stop at its next step or poll."""
        self.signal_number = self.signal_number or signal_number
        self._event.set()

    @property
    def tripped(self) -> bool:
        """True once a signal came."""
        return self._event.is_set()

    @property
    def name(self) -> str:
        """`SIGTERM`, `SIGINT`."""
        return signal.Signals(self.signal_number).name if self.signal_number else "a signal"

    def error(self, message: str, **details: list[str]) -> Interrupted:
        """`interrupted by SIGTERM: <message>`, carrying the signal's number."""
        return Interrupted(
            f"interrupted by {self.name}: {message}",
            signal_number=self.signal_number or signal.SIGTERM,
            **details,
        )

    def check(self, where: str) -> None:
        """Interrupted (the step in progress fails, to be rolled back) once tripped."""
        if self.tripped:
            raise self.error(f"{where} stopped")


@contextmanager
def catching_signals() -> Iterator[Interrupt]:
    """SIGTERM and SIGINT trip the yielded Interrupt instead of killing the process (only
    the main thread can take signals; elsewhere nothing is installed)."""
    interrupt = Interrupt()
    if threading.current_thread() is not threading.main_thread():
        yield interrupt
        return

    def handler(signal_number: int, _: FrameType | None) -> None:
        interrupt.trip(signal_number)

    previous = {sig: signal.getsignal(sig) for sig in SIGNALS}
    for sig in SIGNALS:
        signal.signal(sig, handler)
    try:
        yield interrupt
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
