"""Drain a seat before removing it: wait until its engine runs no request, bounded.

Reads vLLM's Prometheus gauge `vllm:num_requests_running` from /metrics, asked from the
seat's own host. Called by apply for removals, after the seat's aliases are gone.
"""

from __future__ import annotations

import re
import time
from typing import Protocol

from fleet.errors import FleetError
from fleet.spec.models import Host
from reconciler.adapters.http import request_via
from reconciler.host import HostSession
from reconciler.runtimes import adapter_for
from reconciler.workflows.seats import seat_address

_RUNNING = re.compile(r"^vllm:num_requests_running(?:\{[^}]*\})?\s+([0-9.eE+-]+)", re.M)


class Waiter(Protocol):
    """Receives progress while waiting."""

    def waiting(self, reason: str, seconds: float) -> None: ...


def running_requests(metrics: str) -> float | None:
    """Sum of the running-requests gauge over every model; None if absent."""
    values = [float(v) for v in _RUNNING.findall(metrics)]
    return sum(values) if values else None


def drain(
    conn: HostSession,
    host: Host,
    seat: str,
    timeout: float,
    waiter: Waiter,
    port: int | None = None,
) -> bool:
    """True once the seat runs no request; False when the time bound passed first."""
    port = port or adapter_for(host).port_of(conn, host, seat)
    if port is None:
        return True
    started = time.monotonic()
    while True:
        try:
            reply = request_via(conn, seat_address(host), port, "GET", "/metrics", timeout=5)
            running = running_requests(reply.body)
        except FleetError:
            return True  # nothing answers: nothing to drain
        if not running:
            return True
        waited = time.monotonic() - started
        if waited > timeout:
            return False
        waiter.waiting(f"{seat} still runs {running:.0f} request(s)", waited)
        time.sleep(1.0)
