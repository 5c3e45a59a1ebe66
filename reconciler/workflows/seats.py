"""The health gate of one seat after apply started it, and where its engine answers.

Observes one seat in one round trip (its runtime's facts about it and the GPU processes),
asks its engine's /health and /v1/models from its host, and polls the gate until healthy,
failed or out of time. What starts or removes a seat is its host's runtime adapter
(`reconciler.runtimes`). Used by apply and its rollback.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fleet.errors import FleetError
from fleet.facts.openai_models import model_ids
from fleet.observed.assemble import assemble_host
from fleet.observed.models import ObservedHost, ObservedSeat
from fleet.plan.health import Endpoints, HealthState, Verdict, judge_seat
from fleet.runtimes import runtime_for, seat_script
from fleet.spec.models import DesiredFleet, Host
from reconciler.adapters.http import request_via
from reconciler.clock import SYSTEM_CLOCK, Clock
from reconciler.host import HostSession, Sessions
from reconciler.workflows.observe import new_boundary

Waiting = Callable[[str, float], None]  # (reason, seconds waited) -> None


def seat_address(host: Host) -> str:
    """Where the seat's port answers from the host itself."""
    return "127.0.0.1" if host.publish_address in ("0.0.0.0", "") else host.publish_address


def endpoints(conn: HostSession, host: Host, port: int) -> Endpoints:
    """/health status and /v1/models ids of an engine, asked from its host."""
    address = seat_address(host)
    try:
        health = request_via(conn, address, port, "GET", "/health", timeout=5.0).status
        models = request_via(conn, address, port, "GET", "/v1/models", timeout=5.0).json()
    except FleetError:
        return Endpoints()
    return Endpoints(health_status=health, served_models=model_ids(models))


def observe_seat(conn: HostSession, host: Host, seat_name: str) -> ObservedHost:
    """What the health gate reads about one seat, in one round trip: its instance's
    state, live argv and log, and the GPU processes (not the whole host's facts)."""
    boundary = new_boundary()
    result = conn.run("sh -s", stdin=seat_script(host, seat_name, boundary))
    observed = assemble_host(host.name, result.stdout, runtime_for(host), boundary)
    if not host.gpus and observed.gpu_error:
        observed = observed.model_copy(update={"gpu_error": None})
    return observed


def look(
    connections: Sessions, desired: DesiredFleet, seat_name: str
) -> tuple[ObservedSeat | None, Endpoints, bool]:
    """One observation of a seat: its facts, its endpoints, whether GPU facts were read."""
    seat = desired.seats[seat_name]
    host = desired.hosts[seat.host]
    conn = connections.get(seat.host)
    observed = observe_seat(conn, host, seat_name)
    live = _instance(observed, seat_name, seat.port)
    answers = endpoints(conn, host, seat.port) if live and live.instance.running else Endpoints()
    return live, answers, observed.gpu_error is None


def _instance(observed: ObservedHost, seat_name: str, port: int) -> ObservedSeat | None:
    """The seat's instance; while two copies run (a surge), the one on `port`."""
    copies = [s for s in observed.seats if s.managed and s.name == seat_name]
    if len(copies) > 1:
        return next((s for s in copies if s.port == port), None)
    return copies[0] if copies else None


def wait_healthy(
    connections: Sessions,
    desired: DesiredFleet,
    seat_name: str,
    timeout: float,
    waiting: Waiting,
    interval: float = 2.0,
    clock: Clock = SYSTEM_CLOCK,
) -> Verdict:
    """Poll the health gate until healthy, failed or out of time."""
    seat = desired.seats[seat_name]
    host = desired.hosts[seat.host]
    band = seat.band(desired.settings.concurrency_band)
    started = clock.monotonic()
    while True:
        live, answers, gpu_facts = look(connections, desired, seat_name)
        verdict = judge_seat(seat, host, band, live, answers, gpu_facts)
        waited = clock.monotonic() - started
        if verdict.state is not HealthState.STARTING:
            return verdict
        if waited > timeout:
            return Verdict(
                state=HealthState.FAILED,
                reason=f"not healthy after {timeout:.0f}s: {verdict.reason}",
            )
        waiting(verdict.reason, waited)
        clock.sleep(interval)


def rendered(desired: DesiredFleet, seat_name: str) -> dict[str, Any]:
    """The definition of a desired seat, as its host's runtime renders it."""
    seat = desired.seats[seat_name]
    host = desired.hosts[seat.host]
    return runtime_for(host).render_seat(seat, host)
