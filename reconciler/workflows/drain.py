"""Drain a seat before removing it: wait until its engine runs no request, bounded.

Reads the engine's running-requests gauge from /metrics (each engine module names its
own: `Engine.METRICS.running`), asked from the seat's own host. A seat whose gauge cannot
be read (no such metric, /metrics not served, an engine fleet does not know) is not taken
for drained: drain waits out its whole bound and says so. An engine that does not answer
at all has no request in flight. Called by apply for removals, after the seat's aliases
are gone; its waits go through a `reconciler.clock.Clock`.
"""

from __future__ import annotations

from typing import Protocol

from fleet.engines import running_requests
from fleet.errors import FleetError
from fleet.spec.models import Host
from reconciler.adapters.http import request_via
from reconciler.clock import SYSTEM_CLOCK, Clock
from reconciler.host import HostSession
from reconciler.runtimes import adapter_for
from reconciler.workflows.seats import seat_address

POLL_SECONDS = 1.0


class Waiter(Protocol):
    """Receives progress while waiting."""

    def waiting(self, reason: str, seconds: float) -> None: ...


def drain(
    conn: HostSession,
    host: Host,
    seat: str,
    timeout: float,
    waiter: Waiter,
    port: int | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> bool:
    """True once the seat runs no request; False when the time bound passed first."""
    port = port or adapter_for(host).port_of(conn, host, seat)
    if port is None:
        return True
    started = clock.monotonic()
    while True:
        try:
            reply = request_via(conn, seat_address(host), port, "GET", "/metrics", timeout=5)
        except FleetError:
            return True  # nothing answers: no request can be in flight
        running = running_requests(reply.body) if reply.status == 200 else None
        if running == 0:
            return True
        waited = clock.monotonic() - started
        if waited > timeout:
            return False
        waiter.waiting(_reason(seat, running, reply.status, timeout), waited)
        clock.sleep(POLL_SECONDS)


def _reason(seat: str, running: float | None, status: int, timeout: float) -> str:
    if running is not None:
        return f"{seat} still runs {running:.0f} request(s)"
    what = "no running-requests gauge" if status == 200 else f"HTTP {status}"
    return f"{seat}: /metrics answers {what}, so drain waits out its bound ({timeout:g} s)"
