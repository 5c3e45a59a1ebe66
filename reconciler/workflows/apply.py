"""Execute a plan: model fetches (`reconciler.workflows.fetch`), seats behind health gates
(hosts concurrently), the gateway, removals, Prometheus's target files.

Called by `fleet apply`. Every touched host is locked first. A seat counts as changed only
once its health gate passes; gateway aliases move only after their seats are healthy. On
any failure everything this apply changed is put back (compose files, the services they
define, the gateway config) and verified, and `ApplyError("rolled back: <cause>")` says so.
Each step is recorded in the host's journal; the putting back is
`reconciler.workflows.rollback`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from fleet.errors import ApplyError, FleetError, Interrupted, LockError, PlanError
from fleet.gateways import kind_of
from fleet.observed.findings import FindingKind
from fleet.plan.actions import Action, ActionKind, Wave
from fleet.plan.live_port import as_planned
from fleet.plan.plan import Plan
from fleet.spec.models import SECOND_COPY, DesiredFleet
from reconciler.clock import SYSTEM_CLOCK, Clock
from reconciler.host import Sessions
from reconciler.runtimes import adapter_for
from reconciler.workflows import failpoint, locks, targets
from reconciler.workflows import gateway as gateway_ops
from reconciler.workflows.client_apply import KeyOptions, Show, apply_client_wave
from reconciler.workflows.drain import drain
from reconciler.workflows.fetch import FetchOptions, apply_fetch_wave
from reconciler.workflows.interrupt import Interrupt
from reconciler.workflows.rollback import rollback
from reconciler.workflows.seat_wave import Reporter, Undo, apply_seat_wave, by_host


@dataclass(frozen=True)
class ApplyOptions:
    """Time limits of apply's waits, in seconds, and the clock they wait on."""

    seat_timeout: float = 900.0
    gateway_timeout: float = 120.0
    drain_timeout: float = 120.0
    fetch_timeout: float = 6 * 3600.0
    clock: Clock = SYSTEM_CLOCK
    interrupt: Interrupt = field(default_factory=Interrupt)  # tripped by SIGTERM/SIGINT
    show_key: Show | None = None  # prints a manual client's new key once, on a terminal

    def keys(self) -> KeyOptions:
        """The client wave's options."""
        return KeyOptions(timeout=self.gateway_timeout, clock=self.clock, show=self.show_key)


def apply_plan(
    desired: DesiredFleet,
    connections: Sessions,
    plan: Plan,
    options: ApplyOptions,
    reporter: Reporter,
) -> list[str]:
    """Apply every action of the plan; the list of what changed."""
    if plan.blockers:
        raise PlanError(
            "the plan has blockers: " + "; ".join(f"{b.target}: {b.message}" for b in plan.blockers)
        )
    if desired.gateway and any(a.wave is Wave.GATEWAY for a in plan.actions):
        gateway_ops.master_key(desired.gateway)  # an unset key fails before anything changes
    if any(a.wave is Wave.MONITORING for a in plan.actions):
        targets.gateway_token(desired)  # so does the gateway's scrape credentials
    desired = as_planned(desired, plan.live_on_second)
    hosts = sorted({a.host for a in plan.actions})
    taken = take_locks(desired, connections, hosts, plan, reporter)
    try:
        done = _run(desired, connections, plan, options, reporter)
        finish(desired, connections, taken, plan)
    except Exception:  # a kill (failpoint.Crash, SIGKILL) releases nothing, as for real
        release_locks(desired, connections, taken)
        raise
    release_locks(desired, connections, taken)
    return done


def take_locks(
    desired: DesiredFleet, connections: Sessions, hosts: list[str], plan: Plan, reporter: Reporter
) -> list[str]:
    """Lock every host (taking over the stale lock of an apply that died on this machine)
    and open the journal; the hosts locked, released again if one cannot be. A host this
    plan does not touch but where an apply was left (a lock, an open journal) is locked
    too when its lock can be taken over, so its journal is closed and its lock goes."""
    taken: list[str] = []
    left = sorted(left_behind(plan) & set(desired.hosts) - set(hosts))
    try:
        for name in hosts + left:
            conn, host = connections.get(name), desired.hosts[name]
            try:
                previous = locks.acquire(conn, host)
            except LockError:
                if name in left:
                    continue  # held by a live apply or elsewhere: not ours to touch
                raise
            taken.append(name)
            if previous is not None:
                reporter.step(f"{name}: took over the lock of an apply that is gone ({previous})")
                locks.record(conn, host, "recovered", holder=previous)
            locks.record(
                conn, host, "begin", summary=plan.summary(), commit=plan.desired_commit or ""
            )
    except Exception:
        release_locks(desired, connections, taken)
        raise
    failpoint.hit("locks.taken")
    return taken


def left_behind(plan: Plan) -> set[str]:
    """Hosts where plan found a lock or an apply's journal left open."""
    kinds = (FindingKind.HOST_LOCKED, FindingKind.INTERRUPTED_APPLY)
    return {f.target for f in plan.findings if f.kind in kinds}


def finish(desired: DesiredFleet, connections: Sessions, hosts: list[str], plan: Plan) -> None:
    """Close every host's journal: the desired/ commit is live."""
    for name in hosts:
        locks.record(
            connections.get(name), desired.hosts[name], "finished", commit=plan.desired_commit or ""
        )
    failpoint.hit("apply.finished")


def release_locks(desired: DesiredFleet, connections: Sessions, taken: list[str]) -> None:
    """Drop the locks taken; one that cannot be dropped does not keep the others."""
    for name in taken:
        try:
            locks.release(connections.get(name), desired.hosts[name])
        except FleetError:
            continue


def _run(
    desired: DesiredFleet,
    connections: Sessions,
    plan: Plan,
    options: ApplyOptions,
    reporter: Reporter,
) -> list[str]:
    undo = Undo()
    done: list[str] = []
    interrupt = options.interrupt
    later: list[tuple[Wave, Callable[[], list[str]]]] = [
        (
            Wave.GATEWAY,
            lambda: _apply_gateway(
                _after_surges(desired, undo),
                connections,
                plan.actions,
                options,
                reporter,
                undo,
                frozenset(plan.only_seats),
            ),
        ),
        (
            Wave.REMOVALS,
            lambda: _apply_removals(desired, connections, plan.actions, options, reporter),
        ),
        (
            Wave.CLIENTS,
            lambda: apply_client_wave(
                _after_surges(desired, undo), connections, plan.actions, options.keys(), reporter
            ),
        ),
        (
            Wave.MONITORING,
            lambda: _apply_targets(_after_surges(desired, undo), connections, plan, reporter),
        ),
    ]
    try:
        fetching = FetchOptions(timeout=options.fetch_timeout, clock=options.clock)
        done += apply_fetch_wave(desired, connections, plan.actions, fetching, reporter)
        done += apply_seat_wave(
            desired,
            connections,
            plan.actions,
            options.seat_timeout,
            reporter,
            undo,
            clock=options.clock,
            interrupt=interrupt,
            drain_timeout=options.drain_timeout,
            gateway_timeout=options.gateway_timeout,
        )
        while later and not interrupt.tripped:
            done += later.pop(0)[1]()
    except FleetError as failure:
        reporter.step(f"failed: {failure}; rolling back")
        restored = rollback(desired, connections, undo, options, reporter)
        for name in sorted({a.host for a in plan.actions}):
            try:
                locks.record(
                    connections.get(name), desired.hosts[name], "rolled-back", cause=str(failure)
                )
            except FleetError as err:
                restored.append(f"journal on {name} not written: {err}")
        if isinstance(failure, Interrupted):
            raise interrupt.error(
                "rolled back what this apply changed", rolled_back=restored
            ) from failure
        raise ApplyError(f"rolled back: {failure}", rolled_back=restored) from failure
    left = [wave.title for wave, _ in later if any(a.wave is wave for a in plan.actions)]
    if interrupt.tripped and left:
        raise _stopped(desired, connections, plan, interrupt, done, left)
    return done


def _after_surges(desired: DesiredFleet, undo: Undo) -> DesiredFleet:
    """desired/ with every seat this apply surged on the port it serves on now."""
    for seat in undo.surged:
        desired = desired.flipped(seat)
    return desired


def _stopped(
    desired: DesiredFleet,
    connections: Sessions,
    plan: Plan,
    interrupt: Interrupt,
    done: list[str],
    left: list[str],
) -> Interrupted:
    """The apply stopped between waves: what it did stays, the rest is the next apply's."""
    for name in sorted({a.host for a in plan.actions}):
        locks.record(
            connections.get(name),
            desired.hosts[name],
            "interrupted",
            signal=interrupt.name,
            left=", ".join(left),
        )
    return interrupt.error(
        f"stopped before the {' and '.join(left)} wave ({len(done)} step(s) done and "
        "kept); the plan shows what remains",
        done=done,
    )


def _apply_gateway(
    desired: DesiredFleet,
    connections: Sessions,
    actions: tuple[Action, ...],
    options: ApplyOptions,
    reporter: Reporter,
    undo: Undo,
    only_seats: frozenset[str],
) -> list[str]:
    group = [a for a in actions if a.wave is Wave.GATEWAY]
    gateway = desired.gateway
    if not group or gateway is None:
        return []
    conn = connections.get(gateway.host)
    current = conn.read_file(gateway.config_path)
    if current is None:
        raise ApplyError(f"{gateway.config_path} vanished from {gateway.host}")
    moved = [a.target for a in group if a.kind in (ActionKind.ADD_ALIAS, ActionKind.RETARGET_ALIAS)]
    text = kind_of(gateway).render_config(current, desired, only_seats)
    if not moved and all(a.kind is ActionKind.RESTART_GATEWAY for a in group):
        moved = [alias for s in desired.seats.values() for alias in s.aliases]  # recovery
    if (undo.surged or undo.handed_back) and text == current and not _needs_restart(group, undo):
        how = "a surge" if undo.surged else "a handoff's return"
        reporter.step(f"{gateway.host}: {gateway.config_path} already says so ({how} moved it)")
    else:
        reporter.step(f"{gateway.host}: edit {gateway.config_path}")
        if undo.gateway_previous is None:  # before anything changes: the rollback's text
            undo.gateway_previous = current
        gateway_ops.switch_config(
            connections, desired, text, moved, options.gateway_timeout, reporter, options.clock
        )
    return [
        f"{a.kind.value.replace('-', ' ')} {a.target}"
        for a in group
        if a.kind is not ActionKind.RESTART_GATEWAY
    ]


def _apply_targets(
    desired: DesiredFleet, connections: Sessions, plan: Plan, reporter: Reporter
) -> list[str]:
    """Prometheus's target files, from desired/ as this apply left it (surged seats on
    their new ports, removed seats gone), when the plan writes any."""
    if not any(a.wave is Wave.MONITORING for a in plan.actions):
        return []
    return targets.write_targets(desired, connections, reporter)


def _needs_restart(group: list[Action], undo: Undo) -> bool:
    """A restart planned for what is served (not only for the aliases a surge moved)."""
    return any(
        a.kind is ActionKind.RESTART_GATEWAY and not a.reasons[0].startswith("load the edited")
        for a in group
    )


def _apply_removals(
    desired: DesiredFleet,
    connections: Sessions,
    actions: tuple[Action, ...],
    options: ApplyOptions,
    reporter: Reporter,
) -> list[str]:
    done = []
    for host_name, group in by_host(actions, Wave.REMOVALS).items():
        host, conn = desired.hosts[host_name], connections.get(host_name)
        for action in group:
            reporter.step(f"{host_name}: drain seat {action.target}")
            drain(conn, host, action.target, options.drain_timeout, reporter)
            reporter.step(f"{host_name}: remove seat {action.target}")
            runtime = adapter_for(host)
            current = runtime.snapshot(conn, host)
            instances = [
                name
                for name in (action.target, f"{action.target}{SECOND_COPY}")
                if runtime.port_in(current, name) is not None
            ] or [action.target]  # `<seat>-b`: a surge left it on its second port
            for instance in instances:
                runtime.remove_seat(conn, desired, host, instance)
            current = runtime.snapshot(conn, host)
            runtime.write_seats(conn, desired, host, current, dict.fromkeys(instances))
            locks.record(conn, host, "remove-seat", target=action.target)
            failpoint.hit("removals.removed")
            done.append(f"remove seat {action.target} on {host_name}")
    return done
