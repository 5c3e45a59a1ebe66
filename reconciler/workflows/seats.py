"""Seat operations on one host: upload its compose file, start one service, wait for the
health gate, remove a service. Used by apply and its rollback.

Only the named service is touched (`up -d --no-deps SERVICE`), so untouched seats are
never recreated. The compose file is written atomically and the previous one is kept
beside it as `compose.yaml.prev`.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from typing import Any

from fleet.errors import ApplyError, FleetError
from fleet.facts.openai_models import model_ids
from fleet.facts.script import seat_script
from fleet.names import SEAT_LABEL
from fleet.observed.assemble import assemble_host
from fleet.observed.models import ObservedHost, ObservedSeat
from fleet.plan.health import Endpoints, HealthState, Verdict, judge_seat
from fleet.render.compose import HEADER, compose_path, project_name, render_service
from fleet.render.yamltext import dump_yaml, load_yaml
from fleet.secrets import referenced_variables
from fleet.spec.models import DesiredFleet, Host
from reconciler.adapters.http import request_via
from reconciler.clock import SYSTEM_CLOCK, Clock
from reconciler.host import HostSession, Sessions

Waiting = Callable[[str, float], None]  # (reason, seconds waited) -> None


def compose(desired: DesiredFleet, host: Host, *args: str) -> str:
    """A `docker compose` command line for the host's project."""
    words = [
        "docker",
        "compose",
        "-p",
        project_name(desired, host.name),
        "-f",
        compose_path(host),
        *args,
    ]
    return " ".join(shlex.quote(w) for w in words)


def merged_compose(
    desired: DesiredFleet,
    host: Host,
    previous: str | None,
    changes: dict[str, dict[str, Any] | None],
) -> str:
    """The previous file with these services set (dict) or removed (None), sorted."""
    services: dict[str, Any] = {}
    if previous:
        tree = load_yaml(previous) or {}
        services = {str(k): v for k, v in (tree.get("services") or {}).items()}
    for name, service in changes.items():
        if service is None:
            services.pop(name, None)
        else:
            services[name] = service
    document = {
        "name": project_name(desired, host.name),
        "services": {k: services[k] for k in sorted(services)},
    }
    return dump_yaml(document, HEADER)


def env_file(text: str) -> str:
    """The `.env` compose reads for the file's `${VAR}` interpolations, from our environment.

    Secrets reach the host only here (mode 0600), never the compose file or desired/.
    """
    lines = []
    for name in referenced_variables(text):
        value = os.environ.get(name)
        if value is None:
            raise ApplyError(f"environment variable {name} (used by a seat's env) is not set")
        lines.append(f"{name}={value}")
    return "".join(f"{line}\n" for line in lines)


def upload_compose(conn: HostSession, host: Host, text: str, previous: str | None) -> None:
    """Write the compose file (and its .env) atomically, keeping `previous` (the file as the
    caller just read it) beside it as compose.yaml.prev."""
    path = compose_path(host)
    secrets = env_file(text)
    conn.check(f"mkdir -p {shlex.quote(host.compose_dir)}")
    conn.write_file_atomic(f"{host.compose_dir.rstrip('/')}/.env", secrets, mode=0o600)
    if previous is not None:
        conn.write_file_atomic(path + ".prev", previous)
    conn.write_file_atomic(path, text)


def restore_compose(conn: HostSession, host: Host, previous: str | None) -> None:
    """Put the previous compose file back (or remove the file if there was none)."""
    path = compose_path(host)
    if previous is None:
        conn.run(f"rm -f {shlex.quote(path)}")
    else:
        conn.write_file_atomic(path, previous)


def start_service(conn: HostSession, desired: DesiredFleet, host: Host, service: str) -> None:
    """Create or recreate one service, leaving every other one alone."""
    conn.check(compose(desired, host, "up", "-d", "--no-deps", service), timeout=900)


def stop_container(conn: HostSession, name: str) -> None:
    """Stop a container fleet did not create (it stays, to be started again on rollback)."""
    conn.check(f"docker stop {shlex.quote(name)}", timeout=300)


def start_container(conn: HostSession, name: str) -> None:
    """Start a stopped container again."""
    conn.check(f"docker start {shlex.quote(name)}", timeout=300)


def remove_container(conn: HostSession, name: str) -> None:
    """Remove a stopped container, once the seat that took it over is healthy."""
    conn.check(f"docker rm {shlex.quote(name)}", timeout=300)


def stop_service(conn: HostSession, desired: DesiredFleet, host: Host, service: str) -> None:
    """Stop and remove one service's container."""
    conn.check(compose(desired, host, "rm", "--stop", "--force", service), timeout=300)


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
    """What the health gate reads about one seat, in one round trip: its container's
    state, live argv and log, and the GPU processes (not the whole host's facts)."""
    result = conn.run("sh -s", stdin=seat_script(SEAT_LABEL, seat_name))
    observed = assemble_host(host.name, result.stdout)
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
    live = observed.seat(seat_name)
    answers = endpoints(conn, host, seat.port) if live and live.container.running else Endpoints()
    return live, answers, observed.gpu_error is None


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
    """The compose service of a desired seat."""
    seat = desired.seats[seat_name]
    return render_service(seat, desired.hosts[seat.host])
