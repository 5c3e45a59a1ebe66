"""Surge one seat: its new copy beside the old, the gateway moves, the old drains and goes.

Called by the seat wave (`reconciler.workflows.seat_wave`) for a replace plan chose to
surge (`fleet.plan.strategy`). The new copy is the seat's second instance
(`DesiredFleet.instance_name`, on the seat's other port: `DesiredFleet.flipped`):
1. add it to the host's definitions and start it; the old copy keeps serving;
2. hold it to the health gate exactly as a recreate's new copy;
3. move the seat's aliases to it through the gateway (`gateway.switch_config`: blue/green
   behind the front, so no request is lost; in place where there is none);
4. drain the old copy (its engine's running requests reach 0, bounded) and remove it.
A new copy that fails its gate is removed by the apply's rollback (it is in
`Undo.created`) and the old one never stopped serving. Once the old copy is gone it is in
`Undo.replaced`, so a later failure of the apply starts it again. Seats of one host (so
of one GPU) surge and recreate one after another, never at the same time.
"""

from __future__ import annotations

from fleet.errors import ApplyError
from fleet.gateways import kind_of
from fleet.plan.health import HealthState
from fleet.spec.models import DesiredFleet
from reconciler.runtimes import adapter_for
from reconciler.workflows import failpoint, locks
from reconciler.workflows import gateway as gateway_ops
from reconciler.workflows import seats as seat_ops
from reconciler.workflows.drain import drain
from reconciler.workflows.wave_run import WaveRun, check_stop, waiting_for


def surge_seat(run: WaveRun, host_name: str, seat: str) -> str:
    """Replace one seat by a surge; the line apply reports for it."""
    desired, reporter = run.desired, run.reporter
    host, conn = desired.hosts[host_name], run.sessions.get(host_name)
    runtime = adapter_for(host)
    after = desired.flipped(seat)
    old, new = desired.instance_name(seat), after.instance_name(seat)
    old_port, new_port = desired.seats[seat].port, after.seats[seat].port
    reporter.step(f"{host_name}: surge seat {seat}: start {new} on port {new_port} beside {old}")
    current = runtime.snapshot(conn, host)
    runtime.write_seats(conn, after, host, current, {new: seat_ops.rendered(after, seat)})
    run.undo.created[host_name].append(new)
    started = run.clock.monotonic()
    runtime.start_seat(conn, after, host, new)
    failpoint.hit("surge.started")
    verdict = seat_ops.wait_healthy(
        run.sessions,
        after,
        seat,
        run.seat_timeout,
        waiting_for(run, host_name),
        clock=run.clock,
    )
    if verdict.state is not HealthState.HEALTHY:
        raise ApplyError(
            f"seat {seat} on {host_name}: {verdict.reason} (surge: the new copy {new} "
            f"on port {new_port} is removed; the old copy {old} kept serving on port {old_port})"
        )
    seconds = f"{run.clock.monotonic() - started:.1f}"
    reporter.step(f"{host_name}: seat {seat} healthy on port {new_port}: {verdict.reason}")
    failpoint.hit("surge.healthy")
    check_stop(run, host_name)
    move_aliases(run, after, seat)
    failpoint.hit("surge.aliases_moved")
    reporter.step(f"{host_name}: drain seat {seat} on port {old_port}")
    if not drain(conn, host, seat, run.drain_timeout, reporter, port=old_port, clock=run.clock):
        reporter.step(f"{host_name}: seat {seat} on port {old_port} still busy after the bound")
    reporter.step(f"{host_name}: remove {old} (port {old_port})")
    runtime.remove_seat(conn, desired, host, old)
    run.undo.replaced[host_name].append(old)
    runtime.write_seats(conn, after, host, runtime.snapshot(conn, host), {old: None})
    failpoint.hit("surge.old_removed")
    run.undo.surged.append(seat)
    locks.record(
        conn, host, "replace-seat", target=seat, seconds=seconds, how="surge", port=str(new_port)
    )
    return f"replace seat {seat} on {host_name} (surge to port {new_port})"


def move_aliases(run: WaveRun, after: DesiredFleet, seat: str) -> None:
    """Point the seat's aliases at its new copy (one gateway switch at a time)."""
    gateway = after.gateway
    aliases = after.seats[seat].aliases
    if gateway is None or not aliases:
        return
    with run.gateway_lock:
        conn = run.sessions.get(gateway.host)
        current = conn.read_file(gateway.config_path)
        if current is None:
            raise ApplyError(f"{gateway.config_path} vanished from {gateway.host}")
        text = kind_of(gateway).render_config(current, after, frozenset({seat}))
        run.reporter.step(f"{gateway.host}: move {', '.join(aliases)} to seat {seat}'s new copy")
        if run.undo.gateway_previous is None:  # before anything changes: the rollback's text
            run.undo.gateway_previous = current
        gateway_ops.switch_config(
            run.sessions, after, text, aliases, run.gateway_timeout, run.reporter, run.clock
        )
