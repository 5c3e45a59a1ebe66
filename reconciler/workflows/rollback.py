"""Put back what an apply changed when one of its steps fails: the gateway's previous
config (as it went live: blue/green or in place), every host's seat definitions, the
seats the apply created, replaced or adopted, each previous seat verified serving again.

Called by `reconciler.workflows.apply` with the `Undo` its waves recorded. Each step that
fails is noted and the rollback goes on: the list it returns says what was restored and
what could not be.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from fleet.errors import FleetError
from fleet.runtimes import runtime_for
from fleet.spec.models import DesiredFleet
from reconciler.clock import SYSTEM_CLOCK, Clock
from reconciler.host import Sessions
from reconciler.runtimes import adapter_for, hand_made
from reconciler.workflows import gateway as gateway_ops
from reconciler.workflows import seats as seat_ops
from reconciler.workflows.seat_wave import Reporter, Undo

if TYPE_CHECKING:  # apply imports this module: its options are named in annotations only
    from reconciler.workflows.apply import ApplyOptions


def rollback(
    desired: DesiredFleet,
    connections: Sessions,
    undo: Undo,
    options: ApplyOptions,
    reporter: Reporter,
) -> list[str]:
    """Put back what `undo` recorded; what was restored (failures to restore included).
    The gateway goes back first (a surge's aliases to the old copy, which still runs),
    but after the seats while aliases are handed off: they stay on their fallbacks until
    their own seat's previous copy serves again."""
    restored: list[str] = []
    gateway_back = undo.gateway_previous is not None and desired.gateway is not None
    if gateway_back and not undo.handed:
        restored.append(
            _restore_gateway(connections, desired, undo.gateway_previous or "", options, reporter)
        )
    restored += _restore_seats(desired, connections, undo, options, reporter)
    if gateway_back and undo.handed:
        restored.append(
            _restore_gateway(connections, desired, undo.gateway_previous or "", options, reporter)
        )
    return restored


def _restore_seats(
    desired: DesiredFleet,
    connections: Sessions,
    undo: Undo,
    options: ApplyOptions,
    reporter: Reporter,
) -> list[str]:
    """Every host's definitions and seats as they were before this apply."""
    restored: list[str] = []
    for host_name, previous in undo.definitions.items():
        host, conn = desired.hosts[host_name], connections.get(host_name)
        runtime = adapter_for(host)
        for service in undo.created[host_name]:
            reporter.step(f"{host_name}: remove new seat {service}")
            _try(restored, runtime.remove_seat, conn, desired, host, service)
        _try(restored, runtime.restore, conn, host, previous)
        restored.append(f"{runtime_for(host).RESTORED} on {host_name}")
        for container in undo.adopted[host_name]:
            reporter.step(f"{host_name}: start the hand-made container {container} again")
            _try(restored, hand_made(host).start_hand_made, conn, container)
            restored.append(f"hand-made container {container} on {host_name} (started again)")
        for service in undo.replaced[host_name]:
            reporter.step(f"{host_name}: restart the previous seat {service}")
            _try(restored, runtime.start_seat, conn, desired, host, service)
            restored.append(
                _await_previous(
                    connections,
                    desired,
                    host_name,
                    service,
                    runtime.port_in(previous, service),
                    options,
                    clock=options.clock,
                )
            )
    return restored


def _restore_gateway(
    connections: Sessions,
    desired: DesiredFleet,
    previous: str,
    options: ApplyOptions,
    reporter: Reporter,
) -> str:
    """Put the previous config live again, as it went live (blue/green or in place)."""
    gateway = desired.gateway
    assert gateway is not None
    try:
        if connections.get(gateway.host).read_file(gateway.config_path) == previous:
            return "gateway config (the failed switch had put it back)"
    except FleetError as err:
        return f"gateway config not restored: {err}"
    reporter.step("put the previous gateway config back")
    try:
        gateway_ops.switch_config(
            connections, desired, previous, (), options.gateway_timeout, reporter, options.clock
        )
    except FleetError as err:
        return f"gateway config restored, but its restart failed: {err}"
    return "gateway config"


def _try(notes: list[str], step: Callable[..., object], *args: object) -> None:
    """Run one rollback step; a failure is noted, and the rollback goes on."""
    try:
        step(*args)
    except FleetError as err:
        notes.append(f"rollback step failed: {err}")


def _await_previous(
    connections: Sessions,
    desired: DesiredFleet,
    host_name: str,
    service: str,
    port: int | None,
    options: ApplyOptions,
    clock: Clock = SYSTEM_CLOCK,
) -> str:
    """Wait until the restored seat answers /health again."""
    host, conn = desired.hosts[host_name], connections.get(host_name)
    deadline = clock.monotonic() + options.seat_timeout
    while port is not None and clock.monotonic() < deadline:
        if seat_ops.endpoints(conn, host, port).health_status == 200:
            return f"seat {service} on {host_name} (serving again)"
        clock.sleep(2.0)
    return f"seat {service} on {host_name} (restarted, not verified)"
