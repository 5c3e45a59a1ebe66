"""`fleet reconcile`: the GitOps loop. Each cycle pulls, observes, plans, and acts as told.

A cycle fast-forwards the clone to its upstream (never merging or discarding local work),
loads desired/, observes and plans (the same workflows as `fleet plan`), runs the
watchdog, then decides (`fleet.plan.reconcile.decide`): apply a new commit
(`--auto-apply`), restore drift (`--self-heal`), back off after a failure, or only
report. Apply is `fleet apply`'s: locks, health gates, rollback, the inventory commit,
pushed. A cycle that applied nothing then measures the seats `reconcile.bench` says are
due (`loop_bench`). Every event is one log line and, with a webhook, a JSON POST; metrics
are set after each cycle, and so is the dashboard page when it is served (`--listen`): the
cycle's status, its plan and each apply. A stop request (SIGTERM) is honoured between
steps, so an apply in progress finishes, and its locks are released, before the loop exits.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from fleet.errors import ApplyError, FleetError
from fleet.facts.engine_metrics import EngineLoad
from fleet.observed.models import Observation
from fleet.plan.plan import Plan
from fleet.plan.reconcile import Attempts, Move, backoff, decide
from fleet.report.dashboard import Run
from fleet.report.status import build_status
from fleet.spec.models import DesiredFleet
from reconciler.adapters.connections import Connections
from reconciler.adapters.dashboard import Dashboard
from reconciler.adapters.git import changed_since, head_commit, sync_upstream
from reconciler.adapters.metrics import FleetMetrics
from reconciler.adapters.webhook import Notifier, webhook_url
from reconciler.clock import SYSTEM_CLOCK, Clock
from reconciler.host import Sessions
from reconciler.workflows.apply import ApplyOptions, left_behind
from reconciler.workflows.converge import ApplyRun, apply_and_commit
from reconciler.workflows.desired import require_valid
from reconciler.workflows.loop_bench import ScheduledBench
from reconciler.workflows.plans import build_plan
from reconciler.workflows.repo import FleetRepo
from reconciler.workflows.status import plan_run, secret_values
from reconciler.workflows.watchdog import Watchdog

HOLDING = ("dirty", "diverged")


@contextmanager
def ssh_sessions(fleet: DesiredFleet) -> Iterator[Sessions]:
    """One SSH connection per host, opened on first use, closed after the cycle."""
    with Connections(fleet) as connections:
        yield connections


class Events(Protocol):
    """Where the loop says what happened: one structured event at a time."""

    def emit(self, event: str, **fields: Any) -> None: ...


@dataclass(frozen=True)
class LoopOptions:
    """What the loop may do."""

    interval: float = 60.0
    auto_apply: bool = False
    self_heal: bool = False
    prune: bool = False
    watchdog: bool = True
    seat_timeout: float = 900.0


@dataclass
class Reconciler:
    """The loop's state between cycles: failed attempts, the watchdog's samples, bench."""

    desired_dir: Path
    options: LoopOptions
    events: Events
    metrics: FleetMetrics = field(default_factory=FleetMetrics)
    stop: threading.Event = field(default_factory=threading.Event)
    attempts: Attempts | None = None
    watchdog: Watchdog = field(default_factory=Watchdog)
    notifier: Notifier | None = None
    push: bool = True
    open_sessions: Callable[[DesiredFleet], AbstractContextManager[Sessions]] = ssh_sessions
    clock: Clock = SYSTEM_CLOCK
    bench: ScheduledBench | None = None
    applied: bool = False
    failures: int = 0  # cycles failed in a row
    permanent: str | None = None  # the permanent error last reported
    dashboard: Dashboard | None = None  # the page --listen serves, if it does

    def run(self) -> None:
        """Cycle until asked to stop: every interval, longer after failures."""
        while not self.stop.is_set():
            self.cycle()
            self.clock.wait(self.stop, self.next_wait())

    def next_wait(self) -> float:
        """The interval; after temporary failures in a row, exponentially more (capped)."""
        if self.failures == 0 or self.permanent is not None:
            return self.options.interval
        return max(backoff(self.failures, self.options.interval), self.options.interval)

    def cycle(self) -> int:
        """One cycle; plan's exit code (0 in sync, 2 pending, 1 error)."""
        started = self.clock.monotonic()
        try:
            code = self._cycle()
        except FleetError as err:
            self._failed(err)
            code = 1
        else:
            self.failures, self.permanent = 0, None
        self.metrics.duration.set(self.clock.monotonic() - started)
        self.metrics.heartbeat = self.clock.wall()
        self.metrics.failures.set(self.failures)
        self.metrics.backoff.set(self.next_wait())
        if code != 1:
            self.metrics.last_success.set(self.clock.wall())
        return code

    def _failed(self, err: FleetError) -> None:
        """Count the failure; a temporary one backs the loop off, a permanent one is
        reported once and not retried as if time could fix it."""
        self.failures += 1
        if err.temporary:
            self.permanent = None
            wait = self.next_wait()
            self.events.emit("error", message=str(err), temporary=True, retry_in=round(wait))
            return
        if str(err) != self.permanent:
            self.events.emit(
                "error",
                message=str(err),
                temporary=False,
                action="stopped: nothing is retried until desired/ or the hosts change",
            )
            self._notify("error", message=str(err))
        self.permanent = str(err)

    def _cycle(self) -> int:
        state, detail = sync_upstream(self.desired_dir, _generated(self.desired_dir))
        self.events.emit("sync", state=state, detail=detail)
        hold = detail if state in HOLDING else None
        if (head_commit(self.desired_dir) or "").endswith("+dirty"):
            hold = "desired/ has uncommitted changes: only observing"
        self.push = state not in ("no-upstream",)
        fleet, _ = require_valid(self.desired_dir)
        repo = FleetRepo(root=self.desired_dir, desired=fleet, warnings=[])
        if self.notifier is None:
            self.notifier = Notifier(webhook_url(fleet.settings.reconcile.webhook_url), self.clock)
        self.bench = self.bench or ScheduledBench(self.clock)
        with self.open_sessions(fleet) as sessions:
            plan, observation = build_plan(repo, sessions, prune=self.options.prune)
            loads = self.watchdog.sample(repo, sessions, observation, self.clock.monotonic())
            bands = {
                n: (b.min, b.max)
                for n, s in fleet.seats.items()
                for b in [s.band(fleet.settings.concurrency_band)]
            }
            bench = (repo.bench_record(), self.bench.results, self.bench.findings())
            self.metrics.record_cycle(plan, observation, bands, loads, *bench)
            self._show(repo, plan, observation, loads)
            if self.stop.is_set():
                return 2 if plan.actions else 0
            if not plan.actions and self.options.auto_apply and left_behind(plan) and not hold:
                self._close_left(repo, sessions, plan)
            self._watchdog(repo, sessions, observation, hold)
            self.applied = False
            code = self._act(repo, sessions, plan, observation.live_commit, hold)
            if not self.applied:  # after an apply the observation is no longer the fleet's
                self._measure(repo, sessions, observation)
                self._show(repo, plan, observation, loads)
            return code

    def _show(
        self, repo: FleetRepo, plan: Plan, observation: Observation, loads: dict[str, EngineLoad]
    ) -> None:
        """The cycle's status on the dashboard page, with the loop's own bench results. The
        page is a view: whatever goes wrong drawing it is reported, never stops the loop."""
        if self.dashboard is None or self.bench is None:
            return
        record = repo.bench_record()
        measured, found = self.bench.results, self.bench.findings()
        try:
            status = build_status(repo.desired, observation, plan, loads, record, measured, found)
        except Exception as err:  # the loop outlives a bug of its view
            self.events.emit("dashboard-error", message=f"{type(err).__name__}: {err}")
            return
        self.dashboard.update(status, record, measured, secret_values(repo.desired))

    def _page(self, run: Run) -> None:
        if self.dashboard is not None:
            self.dashboard.record(run)

    def _stamp(self) -> str:
        return datetime.fromtimestamp(self.clock.wall(), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def _apply_run(
        self, summary: str, commit: str | None, result: str, live: str | None = None
    ) -> Run:
        """An apply as the dashboard page lists it."""
        return Run(
            at=self._stamp(),
            kind="apply",
            summary=summary,
            desired_commit=commit,
            live_commit=live,
            result=result,
        )

    def _measure(self, repo: FleetRepo, sessions: Sessions, observation: Observation) -> None:
        assert self.bench is not None
        record = repo.bench_record()
        events, stop = self.events.emit, self.stop.is_set
        self.bench.sweep(repo.desired, sessions, observation, record, events, self._notify, stop)
        self.metrics.record_bench(record, self.bench.results, self.bench.findings())

    def _act(
        self, repo: FleetRepo, sessions: Sessions, plan: Plan, live: str | None, hold: str | None
    ) -> int:
        commit = head_commit(self.desired_dir)
        failed = self.attempts if self.attempts and self.attempts.commit == commit else None
        decision = decide(
            pending=bool(plan.actions),
            new_commit=changed_since(self.desired_dir, live),
            settings=repo.desired.settings.reconcile,
            now=datetime.fromtimestamp(self.clock.wall(), UTC),
            clock=self.clock.monotonic(),
            hold=hold or self._blocked(plan),
            auto_apply=self.options.auto_apply,
            self_heal=self.options.self_heal,
            attempts=failed,
        )
        self.events.emit(
            "plan",
            move=decision.move.value,
            reason=decision.reason,
            summary=plan.summary(),
            desired_commit=commit,
            live_commit=live,
        )
        self._page(plan_run(plan, self._stamp(), decision.move.value))
        if decision.move in (Move.APPLY, Move.HEAL):
            return self._apply(repo, sessions, plan, commit, decision.move)
        if decision.move is Move.GIVE_UP:
            self._notify("apply-given-up", reason=decision.reason)
        if plan.actions:
            self._notify("drift", summary=plan.summary(), move=decision.move.value)
        return 1 if plan.blockers else 2 if plan.actions else 0

    def _blocked(self, plan: Plan) -> str | None:
        if not plan.blockers:
            return None
        return "blockers: " + "; ".join(f"{b.target}: {b.message}" for b in plan.blockers)

    def _run(self, repo: FleetRepo, sessions: Sessions) -> ApplyRun:
        options = ApplyOptions(seat_timeout=self.options.seat_timeout, clock=self.clock)
        return ApplyRun(repo, sessions, options, _Steps(self.events), self.push, keep_git=True)

    def _close_left(self, repo: FleetRepo, sessions: Sessions, plan: Plan) -> None:
        """Nothing to do, but an apply died here: take its lock, close its journal."""
        applied = apply_and_commit(self._run(repo, sessions), plan)
        self.events.emit("recovered", hosts=sorted(left_behind(plan)), git=applied.git)

    def _apply(
        self, repo: FleetRepo, sessions: Sessions, plan: Plan, commit: str | None, move: Move
    ) -> int:
        self.applied = True
        try:
            applied = apply_and_commit(self._run(repo, sessions), plan)
        except ApplyError as err:
            failures = (self.attempts.failures if self.attempts else 0) + 1
            self.attempts = Attempts(commit or "", failures, self.clock.monotonic())
            self.metrics.applies.labels("rolled-back").inc()
            self._page(self._apply_run(str(err), commit, "rolled back"))
            self.events.emit("apply-failed", cause=str(err), failures=failures, commit=commit)
            self._notify("apply-rolled-back", cause=str(err), commit=commit)
            return 1
        self.attempts = None
        self.metrics.applies.labels("succeeded").inc()
        if move is Move.HEAL:
            for action in plan.actions:
                self.metrics.heals.labels(action.target, "drift").inc()
        done = applied.done
        summary = "; ".join(done) or "nothing to change"
        self._page(self._apply_run(summary, commit, move.value, live=commit))
        self.events.emit("applied", move=move.value, done=done, commit=commit, git=applied.git)
        self._notify("apply-succeeded" if move is Move.APPLY else "heal", done=done, commit=commit)
        return 0

    def _watchdog(
        self, repo: FleetRepo, sessions: Sessions, observation: Observation, hold: str | None
    ) -> None:
        settings = repo.desired.settings.reconcile
        if not self.options.watchdog or hold or settings.suspend:
            return
        now = self.clock.monotonic
        for seat in self.watchdog.stuck_seats(observation, settings.stuck_after, now()):
            reason = f"requests but no token for {settings.stuck_after}s"
            self.events.emit("watchdog-restart", seat=seat.name, host=seat.host.name, reason=reason)
            self.watchdog.restart(repo, sessions, seat, now())
            self.metrics.heals.labels(seat.name, "stuck").inc()
            self._notify("watchdog-restart", seat=seat.name, host=seat.host.name)

    def _notify(self, event: str, **fields: Any) -> None:
        if self.notifier is not None:
            self.notifier.send({"event": event, "at": self._stamp(), **fields})


def _generated(desired_dir: Path) -> tuple[str, ...]:
    """The repo-relative files fleet itself commits (inventory, its JSON twin, bench)."""
    try:
        fleet, _ = require_valid(desired_dir)
    except FleetError:
        return ()
    inventory = Path(fleet.settings.inventory.path)
    names = (inventory, inventory.with_suffix(".json"), inventory.with_name("BENCH.json"))
    return tuple(p.as_posix() for p in names)


class _Steps:
    """Apply's progress as loop events."""

    def __init__(self, events: Events) -> None:
        self.events = events

    def step(self, message: str) -> None:
        self.events.emit("apply-step", message=message)

    def waiting(self, reason: str, seconds: float) -> None:
        if int(seconds) % 10 == 0:
            self.events.emit("apply-waiting", reason=reason, seconds=round(seconds))
