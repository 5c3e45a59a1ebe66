"""The seat wave of an apply: each host's seats in order, the hosts at the same time.

Seats of one host share its GPUs, so they start one after another, each behind its health
gate, whether it recreates (here) or surges (`reconciler.workflows.surge`): a surge never
overlaps another seat's surge or recreate on the same GPUs. Different hosts share
nothing, so they run concurrently (a fleet's apply takes about as long as its slowest
host, not the sum of every engine's start). Progress lines come prefixed by host. When
one host fails, the others stop at their next step or poll, and the caller rolls back
everything every host recorded in `Undo`.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fleet.errors import ApplyError, FleetError
from fleet.plan.actions import Action, ActionKind, Wave
from fleet.plan.health import HealthState
from fleet.spec.models import DesiredFleet
from reconciler.clock import SYSTEM_CLOCK, Clock
from reconciler.host import Sessions
from reconciler.runtimes import adapter_for, hand_made
from reconciler.workflows import failpoint, handoff, locks
from reconciler.workflows import seats as seat_ops
from reconciler.workflows.interrupt import Interrupt
from reconciler.workflows.surge import surge_seat
from reconciler.workflows.wave_run import (
    Cancelled,
    Reporter,
    SerialReporter,
    Undo,
    WaveRun,
    check_stop,
    waiting_for,
)

__all__ = ["Reporter", "Undo", "apply_seat_wave", "by_host"]


def by_host(actions: tuple[Action, ...], wave: Wave) -> dict[str, list[Action]]:
    """The actions of one wave, grouped by host, hosts sorted."""
    grouped: dict[str, list[Action]] = defaultdict(list)
    for action in actions:
        if action.wave is wave:
            grouped[action.host].append(action)
    return dict(sorted(grouped.items()))


def apply_seat_wave(
    desired: DesiredFleet,
    sessions: Sessions,
    actions: tuple[Action, ...],
    seat_timeout: float,
    reporter: Reporter,
    undo: Undo,
    clock: Clock = SYSTEM_CLOCK,
    interrupt: Interrupt | None = None,
    drain_timeout: float = 120.0,
    gateway_timeout: float = 120.0,
) -> list[str]:
    """Create and replace every seat of the plan, hosts concurrently; what changed."""
    groups = by_host(actions, Wave.SEATS)
    if not groups:
        return []
    run = WaveRun(
        desired,
        sessions,
        seat_timeout,
        SerialReporter(reporter),
        undo,
        threading.Event(),
        clock,
        interrupt,
        drain_timeout,
        gateway_timeout,
    )
    for host in groups:  # made here, so threads only append to their own host's lists
        undo.created[host], undo.replaced[host], undo.adopted[host] = [], [], []
    with ThreadPoolExecutor(max_workers=len(groups), thread_name_prefix="apply") as pool:
        futures = {host: pool.submit(_guarded, run, host, group) for host, group in groups.items()}
    results = {host: future.result() for host, future in futures.items()}
    failures = [r for r in results.values() if isinstance(r, FleetError)]
    if failures:
        raise next((f for f in failures if not isinstance(f, Cancelled)), failures[0])
    return [line for host in groups for line in results[host]]  # type: ignore[union-attr]


def _guarded(run: WaveRun, host: str, group: list[Action]) -> list[str] | FleetError:
    """One host's seats; its failure is returned (and tells the other hosts to stop)."""
    try:
        return _host_seats(run, host, group)
    except FleetError as failure:
        run.stop.set()
        return failure


def _host_seats(run: WaveRun, host_name: str, group: list[Action]) -> list[str]:
    desired, reporter = run.desired, run.reporter
    host, conn = desired.hosts[host_name], run.sessions.get(host_name)
    runtime = adapter_for(host)
    current = runtime.snapshot(conn, host)
    run.undo.definitions[host_name] = current
    done = [_remove_copy(run, host_name, a) for a in group if a.kind is ActionKind.REMOVE_COPY]
    group = [a for a in group if a.kind is not ActionKind.REMOVE_COPY]
    services: dict[str, dict[str, Any] | None] = {
        desired.instance_name(a.target): seat_ops.rendered(desired, a.target)
        for a in group
        if a.strategy != "surge"
    }
    reporter.step(f"{host_name}: upload {runtime.describe(host)}")
    runtime.write_seats(
        conn, desired, host, runtime.snapshot(conn, host) if done else current, services
    )
    failpoint.hit("seat.written")
    for action in group:
        check_stop(run, host_name)
        if action.strategy == "surge":
            done.append(surge_seat(run, host_name, action.target))
        else:
            done.append(_start_seat(run, host_name, action))
    return done


def _remove_copy(run: WaveRun, host_name: str, action: Action) -> str:
    """Remove a seat's copy the gateway does not route to (an interrupted surge's)."""
    host, conn = run.desired.hosts[host_name], run.sessions.get(host_name)
    runtime = adapter_for(host)
    run.reporter.step(f"{host_name}: remove {action.target}: {action.reasons[0]}")
    runtime.remove_seat(conn, run.desired, host, action.target)
    runtime.write_seats(
        conn, run.desired, host, runtime.snapshot(conn, host), {action.target: None}
    )
    locks.record(conn, host, "remove-copy", target=action.target)
    return f"remove copy {action.target} on {host_name}"


def _start_seat(run: WaveRun, host_name: str, action: Action) -> str:
    """Create a seat, or replace it by stopping the old copy first (recreate: its aliases
    handed to their fallbacks and its running requests drained before it stops)."""
    desired, reporter = run.desired, run.reporter
    host, conn = desired.hosts[host_name], run.sessions.get(host_name)
    runtime = adapter_for(host)
    instance = desired.instance_name(action.target)
    verb = "create" if action.kind is ActionKind.CREATE_SEAT else "replace"
    reporter.step(f"{host_name}: {verb} seat {action.target}")
    fresh = verb == "create" or action.adopts is not None  # a new service in the file
    (run.undo.created if fresh else run.undo.replaced)[host_name].append(instance)
    if action.adopts is not None:
        reporter.step(f"{host_name}: stop hand-made container {action.adopts}")
        run.undo.adopted[host_name].append(action.adopts)
        hand_made(host).stop_hand_made(conn, action.adopts)
    elif not fresh:  # a recreate: its aliases to their fallbacks, its requests finish
        handoff.hand_off(run, host_name, action)
        handoff.drain_old(run, host_name, action.target)
    started = run.clock.monotonic()
    runtime.start_seat(conn, desired, host, instance)
    failpoint.hit("seat.started")
    verdict = seat_ops.wait_healthy(
        run.sessions,
        desired,
        action.target,
        run.seat_timeout,
        waiting_for(run, host_name),
        clock=run.clock,
    )
    if verdict.state is not HealthState.HEALTHY:
        raise ApplyError(f"seat {action.target} on {host_name}: {verdict.reason}")
    reporter.step(f"{host_name}: seat {action.target} healthy: {verdict.reason}")
    failpoint.hit("seat.healthy")
    seconds = f"{run.clock.monotonic() - started:.1f}"  # plan's "last start took"
    handoff.hand_back(run, host_name, action)
    if action.adopts is not None:
        reporter.step(f"{host_name}: remove hand-made container {action.adopts}")
        hand_made(host).remove_hand_made(conn, action.adopts)
        run.undo.adopted[host_name].remove(action.adopts)
    locks.record(conn, host, f"{verb}-seat", target=action.target, seconds=seconds)
    return f"{verb} seat {action.target} on {host_name}"
