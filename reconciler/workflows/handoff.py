"""Recreate one seat: its aliases handed to their fallbacks first, the old copy drained.

Called by the seat wave (`reconciler.workflows.seat_wave`) around a replace that plan
chose to recreate. Plan said which aliases a healthy fallback serves meanwhile
(`Action.handoffs`, `fleet.plan.handoff`); the steps are:
1. move those aliases to their fallbacks' seats through the gateway (`gateway.
   switch_config`: blue/green behind the front, so no request is lost, and the old
   proxy finishes what it streams before it stops);
2. drain the old copy: its running requests finish (bounded by the drain timeout), for
   every recreate, handoff or not;
3. (the seat wave) stop it, start the new copy, hold it to its health gate;
4. move the aliases back to the seat.
The gateway text before the first move is the rollback's (`Undo.gateway_previous`), so a
failure anywhere ends with every alias back on its own seat; while aliases are handed
off (`Undo.handed`) the rollback starts the previous copy before it moves them back. An
apply killed meanwhile leaves the gateway routing them to the fallback: plan sees the
alias on another seat (a retarget) and the next apply moves it back.
"""

from __future__ import annotations

from collections.abc import Collection

from fleet.errors import ApplyError
from fleet.gateways import kind_of
from fleet.plan.actions import Action
from fleet.plan.handoff import describe, handed_off
from fleet.spec.models import DesiredFleet
from reconciler.workflows import failpoint, locks
from reconciler.workflows import gateway as gateway_ops
from reconciler.workflows.drain import drain
from reconciler.workflows.wave_run import WaveRun, check_stop


def hand_off(run: WaveRun, host_name: str, action: Action) -> None:
    """Step 1: the aliases plan handed off now route to their fallbacks' seats."""
    if not action.handoffs:
        return
    seat = action.target
    aliases = [h.alias for h in action.handoffs]
    run.reporter.step(
        f"{host_name}: hand off seat {seat}'s aliases while it is recreated: "
        f"{describe(action.handoffs)}"
    )
    handed = handed_off(run.desired, seat, action.handoffs)
    _switch(run, handed, frozenset(h.seat for h in action.handoffs), aliases)
    run.undo.handed.append(seat)
    host, conn = run.desired.hosts[host_name], run.sessions.get(host_name)
    locks.record(conn, host, "handoff", target=seat, aliases=",".join(aliases))
    failpoint.hit("handoff.moved")


def drain_old(run: WaveRun, host_name: str, seat: str) -> None:
    """Step 2: wait until the running copy of the seat has no request in flight."""
    host, conn = run.desired.hosts[host_name], run.sessions.get(host_name)
    port = run.desired.seats[seat].port
    check_stop(run, host_name)
    run.reporter.step(f"{host_name}: drain seat {seat} on port {port}")
    if not drain(conn, host, seat, run.drain_timeout, run.reporter, port=port, clock=run.clock):
        run.reporter.step(f"{host_name}: seat {seat} on port {port} still busy after the bound")


def hand_back(run: WaveRun, host_name: str, action: Action) -> None:
    """Step 4: the handed aliases route to their own seat again (now healthy)."""
    if not action.handoffs:
        return
    seat = action.target
    aliases = [h.alias for h in action.handoffs]
    run.reporter.step(f"{host_name}: hand {', '.join(aliases)} back to seat {seat}")
    _switch(run, run.desired, frozenset({seat}), aliases)
    run.undo.handed.remove(seat)
    run.undo.handed_back.append(seat)
    failpoint.hit("handoff.back")


def _switch(
    run: WaveRun, routed: DesiredFleet, seats: frozenset[str], aliases: Collection[str]
) -> None:
    """Put the entries of `seats` live as `routed` says (one gateway switch at a time)."""
    gateway = routed.gateway
    if gateway is None:
        raise ApplyError("a handoff needs the gateway, and desired/ has no gateway.yaml")
    with run.gateway_lock:
        conn = run.sessions.get(gateway.host)
        current = conn.read_file(gateway.config_path)
        if current is None:
            raise ApplyError(f"{gateway.config_path} vanished from {gateway.host}")
        text = kind_of(gateway).render_config(current, routed, seats)
        if run.undo.gateway_previous is None:  # before anything changes: the rollback's text
            run.undo.gateway_previous = current
        gateway_ops.switch_config(
            run.sessions, routed, text, aliases, run.gateway_timeout, run.reporter, run.clock
        )
