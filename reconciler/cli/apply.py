"""`fleet apply` and `fleet unlock`: the commands that change hosts.

apply plans (or loads a saved plan, which `reconciler.workflows.plans` refuses if the live
fleet moved since), asks for confirmation (skipped with --auto-approve, required when not
on a terminal), applies, and on success commits the regenerated inventory, and nothing
else, to Git.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from reconciler.cli.app import (
    DesiredOption,
    PruneOption,
    SeatOption,
    app,
    clock_of,
    open_fleet,
    output_of,
    sessions_of,
)
from reconciler.cli.output import Output

if TYPE_CHECKING:
    from fleet.plan.plan import Plan


class TerminalReporter:
    """Step lines on stdout; while waiting, a line every 10 s (or a spinner on a terminal)."""

    def __init__(self, output: Output) -> None:
        self.output = output
        self.started = time.monotonic()
        self.last_wait = 0.0
        self.status = output.err.status("") if output.stderr.isatty() else None

    def step(self, message: str) -> None:
        if self.status is not None:
            self.status.stop()
        self.output.line(f"[{time.monotonic() - self.started:6.1f}s] {message}")

    def waiting(self, reason: str, seconds: float) -> None:
        if self.status is not None:
            self.status.update(f"waiting {seconds:.0f}s: {reason}")
            self.status.start()
        elif seconds - self.last_wait >= 10 or seconds < self.last_wait:
            self.output.line(f"          ... {seconds:.0f}s: {reason}")
            self.last_wait = seconds


def refuse_dirty(plan: Plan, allow_dirty: bool) -> None:
    """Apply only what a commit of desired/ says, unless told otherwise."""
    from fleet.errors import FleetError

    if (plan.desired_commit or "").endswith("+dirty") and not allow_dirty:
        raise FleetError(
            "desired/ has uncommitted changes: commit them so the live fleet matches a "
            "revision, or pass --allow-dirty"
        )


def _confirm(plan: Plan, auto_approve: bool) -> None:
    from fleet.errors import FleetError

    if auto_approve:
        return
    if not sys.stdin.isatty():
        raise FleetError(
            "refusing to apply without confirmation: stdin is not a terminal; pass --auto-approve"
        )
    if not typer.confirm(f"Apply {len(plan.actions)} action(s)?", default=False):
        raise typer.Abort()


@app.command()
def apply(
    ctx: typer.Context,
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
    fetch_timeout: Annotated[
        float, typer.Option("--fetch-timeout", help="Seconds a model fetch may take.")
    ] = 6 * 3600.0,
    allow_dirty: Annotated[
        bool,
        typer.Option(
            "--allow-dirty",
            help="Apply desired/ with uncommitted changes (the inventory commit says so).",
        ),
    ] = False,
) -> None:
    """Make the live fleet match desired/, behind health gates, rolling back on failure."""
    from fleet.errors import PlanError
    from reconciler.cli.keys import terminal_printer
    from reconciler.cli.plan import print_plan
    from reconciler.workflows.apply import ApplyOptions
    from reconciler.workflows.converge import ApplyRun, apply_and_commit
    from reconciler.workflows.interrupt import catching_signals
    from reconciler.workflows.plans import build_plan, fresh_saved_plan
    from reconciler.workflows.wave_run import SerialReporter

    output = output_of(ctx)
    repo = open_fleet(output, desired)
    with sessions_of(ctx)(repo.desired) as connections:
        if plan_file is not None:
            plan = fresh_saved_plan(repo, connections, plan_file)
        else:
            plan, _ = build_plan(repo, connections, prune=prune, seats=seat)
        print_plan(output, plan)
        refuse_dirty(plan, allow_dirty)
        if plan.blockers and not plan.empty:
            raise PlanError(f"{len(plan.blockers)} blocker(s): apply refuses this plan")
        if not plan.empty:
            _confirm(plan, auto_approve)
        with catching_signals() as interrupt:
            options = ApplyOptions(
                seat_timeout=timeout,
                fetch_timeout=fetch_timeout,
                clock=clock_of(ctx),
                interrupt=interrupt,
                show_key=terminal_printer(output),  # a manual client's key: a terminal only
            )
            reporter = TerminalReporter(output)
            if hasattr(connections, "on_silence"):  # SSH: a silent host is named while waited on
                connections.on_silence = SerialReporter(reporter).waiting
            run = ApplyRun(repo, connections, options, reporter, push)
            applied = apply_and_commit(run, plan)
        if plan.empty:
            output.line("Nothing to do: the live fleet matches desired/.")
            if applied.git is not None:
                output.line(f"The committed inventory was stale: {applied.git}")
            return
        output.line(f"Applied: {plan.summary()}", style="green")
        output.line(applied.git or "")
        if interrupt.tripped:  # it came during the last step, which finished
            raise interrupt.error("the apply finished first")


@app.command()
def unlock(
    ctx: typer.Context,
    host: Annotated[str, typer.Argument(help="The host whose apply lock to remove.")],
    desired: DesiredOption = None,
    force: Annotated[bool, typer.Option("--force", help="Really remove it.")] = False,
) -> None:
    """Remove a host's apply lock left by an apply that is gone."""
    from fleet.errors import FleetError
    from reconciler.workflows import locks

    output = output_of(ctx)
    repo = open_fleet(output, desired)
    if host not in repo.desired.hosts:
        raise FleetError(f"no host {host!r} in desired/hosts")
    with sessions_of(ctx)(repo.desired) as connections:
        held = locks.break_lock(connections.get(host), repo.desired.hosts[host], force=force)
    if held is None:
        output.line(f"{host} is not locked")
    else:
        output.line(f"removed the lock on {host} (was: {held})")
