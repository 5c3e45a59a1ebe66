"""One apply for the command line and the loop: locks, waves, journal, inventory commit.

`fleet apply` (`reconciler.cli.apply`) and `fleet reconcile` (`reconciler.workflows.
reconcile`) each make or load a plan their own way, then call `apply_and_commit` with an
`ApplyRun` (where, with what options, who hears the steps, whether to push). A plan with
nothing to do still takes every host's lock (taking over the stale lock of an apply that
died on this machine), writes its journal entry and commits an inventory that no longer
matches; otherwise `reconciler.workflows.apply.apply_plan` runs the waves, and the
inventory is committed after it, also when a signal stopped it (`Interrupted`, re-raised).
"""

from __future__ import annotations

from dataclasses import dataclass

from fleet.errors import GitError, Interrupted
from fleet.observed.findings import FindingKind
from fleet.plan.plan import Plan
from reconciler.host import Sessions
from reconciler.workflows.apply import (
    ApplyOptions,
    apply_plan,
    finish,
    release_locks,
    take_locks,
)
from reconciler.workflows.plans import commit_inventory
from reconciler.workflows.repo import FleetRepo
from reconciler.workflows.wave_run import Reporter

REFRESHED = "fleet apply: the inventory refreshed to match the live fleet"


@dataclass(frozen=True)
class ApplyRun:
    """Everything an apply needs besides its plan."""

    repo: FleetRepo
    sessions: Sessions
    options: ApplyOptions
    reporter: Reporter
    push: bool = False
    keep_git: bool = False  # a failed inventory commit is a line, not an error (the loop)


@dataclass(frozen=True)
class Applied:
    """What an apply did and what its inventory commit said (None: nothing committed)."""

    done: list[str]
    git: str | None


def apply_and_commit(run: ApplyRun, plan: Plan) -> Applied:
    """Apply the plan (or only lock, journal and refresh the inventory when it is empty)
    and commit the inventory; `Interrupted` after committing what a signal left."""
    repo, sessions = run.repo, run.sessions
    if plan.empty:
        return _nothing_to_do(run, plan)
    try:
        done = apply_plan(repo.desired, sessions, plan, run.options, run.reporter)
    except Interrupted as stopped:
        lines = stopped.done + [f"rolled back: {r}" for r in stopped.rolled_back]
        headline = f"fleet apply: {stopped.message}"
        run.reporter.step(
            commit_inventory(repo, sessions, lines, run.push, plan.desired_commit, headline)
        )
        raise
    return Applied(done, _commit(run, done, plan.desired_commit))


def _commit(run: ApplyRun, done: list[str], commit: str | None, headline: str | None = None) -> str:
    """Commit the inventory; with `keep_git` a Git failure (the upstream moved meanwhile:
    replayed next cycle) is said, not raised."""
    try:
        return commit_inventory(run.repo, run.sessions, done, run.push, commit, headline)
    except GitError as err:
        if not run.keep_git:
            raise
        return f"inventory not pushed: {err}"


def _nothing_to_do(run: ApplyRun, plan: Plan) -> Applied:
    """Lock and journal like any apply (a stale lock is taken over, the journal closed),
    then commit the inventory if it no longer matches the live fleet."""
    desired = run.repo.desired
    unreachable = {f.target for f in plan.findings if f.kind is FindingKind.HOST_UNREACHABLE}
    hosts = sorted(set(desired.hosts) - unreachable)
    taken = take_locks(desired, run.sessions, hosts, plan, run.reporter)
    try:
        finish(desired, run.sessions, hosts, plan)
    except Exception:
        release_locks(desired, run.sessions, taken)
        raise
    release_locks(desired, run.sessions, taken)
    if not plan.drift:  # e.g. after an apply that died before committing it
        return Applied([], None)
    return Applied([], _commit(run, [], plan.desired_commit, REFRESHED))
