"""`fleet apply` and `fleet unlock`: the commands that change hosts.

apply plans (or loads a saved plan and refuses if the live fleet moved since), asks for
confirmation (skipped with --auto-approve, required when not on a terminal), applies,
and on success commits the regenerated inventory, and nothing else, to Git.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from fleet.errors import FleetError, LockError, PlanError
from fleet.plan.fingerprint import fingerprint, moved
from fleet.plan.plan import Plan
from fleet.report.inventory import build_inventory
from reconciler.adapters.connections import Connections
from reconciler.adapters.git import commit_files, head_commit, open_repo
from reconciler.cli.app import DesiredOption, FleetContext, app, err, open_fleet, out
from reconciler.cli.observe import write_inventory
from reconciler.cli.plan import PruneOption, SeatOption, build_plan, load_plan, print_plan
from reconciler.workflows.apply import ApplyOptions, apply_plan
from reconciler.workflows.locks import lock_path
from reconciler.workflows.observe import observe_fleet


class TerminalReporter:
    """Step lines on stdout; while waiting, a line every 10 s (or a spinner on a terminal)."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.last_wait = 0.0
        self.status = err.status("") if err.is_terminal else None

    def step(self, message: str) -> None:
        if self.status is not None:
            self.status.stop()
        out.print(f"[{time.monotonic() - self.started:6.1f}s] {message}", markup=False)

    def waiting(self, reason: str, seconds: float) -> None:
        if self.status is not None:
            self.status.update(f"waiting {seconds:.0f}s: {reason}")
            self.status.start()
        elif seconds - self.last_wait >= 10 or seconds < self.last_wait:
            out.print(f"          ... {seconds:.0f}s: {reason}", markup=False)
            self.last_wait = seconds


def _saved_plan(ctx: FleetContext, connections: Connections, path: Path) -> Plan:
    saved = load_plan(path)
    commit = head_commit(ctx.root)
    if saved.desired_commit != commit:
        raise PlanError(
            f"desired/ is at {commit or 'no commit'} but the plan was made at "
            f"{saved.desired_commit or 'no commit'}: make a new plan"
        )
    observation = observe_fleet(ctx.fleet, connections)
    changed = moved(saved.fingerprint, fingerprint(ctx.fleet, observation, saved.actions))
    if changed:
        raise PlanError("the live fleet moved since the plan was made: " + "; ".join(changed))
    return saved


def _confirm(plan: Plan, auto_approve: bool) -> None:
    if auto_approve:
        return
    if not sys.stdin.isatty():
        raise FleetError(
            "refusing to apply without confirmation: stdin is not a terminal; pass --auto-approve"
        )
    if not typer.confirm(f"Apply {len(plan.actions)} action(s)?", default=False):
        raise typer.Abort()


def _commit_inventory(
    ctx: FleetContext, connections: Connections, done: list[str], push: bool
) -> None:
    observation = observe_fleet(ctx.fleet, connections)
    paths = [Path(p) for p in write_inventory(ctx, build_inventory(ctx.fleet, observation))]
    if open_repo(ctx.repo_root) is None:
        out.print(f"wrote {paths[0]} (not a Git repository: nothing committed)")
        return
    message = (
        f"fleet apply: {len(done)} change(s) to {ctx.fleet.settings.name}\n\n"
        + "\n".join(f"- {line}" for line in done)
        + "\n"
    )
    sha = commit_files(paths, message, push=push)
    out.print(
        f"committed {paths[0].name} and {paths[1].name} as {sha[:12]}"
        + (" and pushed" if push else "")
    )


@app.command()
def apply(
    plan_file: Annotated[
        Path | None, typer.Argument(help="A plan saved by `fleet plan --out`.")
    ] = None,
    desired: DesiredOption = None,
    auto_approve: Annotated[bool, typer.Option("--auto-approve", help="Do not ask.")] = False,
    seat: SeatOption = None,
    prune: PruneOption = False,
    push: Annotated[bool, typer.Option("--push", help="Push the inventory commit.")] = False,
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds a seat may take to become healthy.")
    ] = 900.0,
) -> None:
    """Make the live fleet match desired/, behind health gates, rolling back on failure."""
    ctx = open_fleet(desired)
    with Connections(ctx.fleet) as connections:
        if plan_file is not None:
            plan = _saved_plan(ctx, connections, plan_file)
            print_plan(plan)
        else:
            plan, _ = build_plan(ctx, connections, prune=prune, seats=seat)
            print_plan(plan)
        if plan.empty:
            out.print("Nothing to do: the live fleet matches desired/.")
            return
        if plan.blockers:
            raise PlanError(f"{len(plan.blockers)} blocker(s): apply refuses this plan")
        _confirm(plan, auto_approve)
        options = ApplyOptions(seat_timeout=timeout)
        done = apply_plan(ctx.fleet, connections, plan, options, TerminalReporter())
        out.print(f"Applied: {plan.summary()}", style="green")
        _commit_inventory(ctx, connections, done, push)


@app.command()
def unlock(
    host: Annotated[str, typer.Argument(help="The host whose apply lock to remove.")],
    desired: DesiredOption = None,
    force: Annotated[bool, typer.Option("--force", help="Really remove it.")] = False,
) -> None:
    """Remove a host's apply lock left by an apply that is gone."""
    ctx = open_fleet(desired)
    if host not in ctx.fleet.hosts:
        raise FleetError(f"no host {host!r} in desired/hosts")
    spec = ctx.fleet.hosts[host]
    with Connections(ctx.fleet) as connections:
        conn = connections.get(host)
        held = conn.read_file(lock_path(spec))
        if held is None:
            out.print(f"{host} is not locked")
            return
        if not force:
            raise LockError(f"{host} is locked by {held.strip()}; add --force to remove it")
        conn.check(f"rm -f {lock_path(spec)}")
        out.print(f"removed the lock on {host} (was: {held.strip()})")
