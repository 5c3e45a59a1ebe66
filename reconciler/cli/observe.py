"""`fleet inventory` and `fleet check`: read-only observation of the live fleet.

Neither starts, stops or writes anything on a host (the integration tests record every
SSH command, SFTP operation and Docker API request to prove it).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from reconciler.cli.app import (
    CliContext,
    DesiredOption,
    DiffOption,
    JsonOption,
    app,
    context_of,
    open_fleet,
    output_of,
)
from reconciler.cli.output import Output

if TYPE_CHECKING:
    from fleet.observed.models import Observation
    from reconciler.host import Sessions
    from reconciler.workflows.repo import FleetRepo


@contextmanager
def observing(context: CliContext, repo: FleetRepo) -> Iterator[Sessions]:
    """Sessions to every host of desired/, with a spinner on a terminal while they work.

    The connections are already being opened when this yields: what the block imports
    before it observes overlaps the SSH handshakes.
    """
    hosts = len(repo.desired.hosts)
    with (
        context.open_sessions(repo.desired, warm=True) as connections,
        context.output.progress(f"observing {hosts} hosts"),
    ):
        yield connections


def observe(context: CliContext, repo: FleetRepo) -> Observation:
    """Observe every host of desired/ (with a spinner on a terminal)."""
    with observing(context, repo) as connections:
        from reconciler.workflows.observe import observe_fleet

        return observe_fleet(repo.desired, connections)


def committed_inventory(path: Path) -> str:
    """The inventory as committed (else as on disk); FleetError if there is none."""
    from fleet.errors import FleetError
    from reconciler.adapters.git import read_committed

    committed = read_committed(path)
    if committed is None:
        if not path.exists():
            raise FleetError(f"no inventory at {path}: run `fleet inventory --write` and commit it")
        committed = path.read_text()
    return committed


def report_unreachable(output: Output, observation: Observation) -> bool:
    """Print one line per host that failed; True if any did."""
    failed = [h for h in observation.hosts.values() if not h.reachable]
    for host in failed:
        output.error(f"{host.name}: {host.error}")
    gateway = observation.gateway
    if gateway is not None and gateway.error:
        output.error(f"gateway {gateway.host}: {gateway.error}")
    return bool(failed) or bool(gateway and gateway.error)


@app.command()
def inventory(
    ctx: typer.Context,
    desired: DesiredOption = None,
    as_json: JsonOption = False,
    write: Annotated[
        bool,
        typer.Option(
            "--write", help="Write the inventory files (path from fleet.yaml) instead of printing."
        ),
    ] = False,
) -> None:
    """Observe the live fleet read-only and print the inventory (Markdown, or --json)."""
    output = output_of(ctx)
    repo = open_fleet(output, desired)
    observation = observe(context_of(ctx), repo)  # first: the hosts are reached while it imports
    from fleet.report.inventory_text import render_json, render_markdown
    from reconciler.workflows.repo import write_inventory

    document = repo.inventory(observation)
    if write:
        for path in write_inventory(repo, document):
            output.line(f"wrote {path}")
    else:
        output.raw(render_json(document) if as_json else render_markdown(document))
    raise typer.Exit(1 if report_unreachable(output, observation) else 0)


@app.command()
def check(
    ctx: typer.Context,
    desired: DesiredOption = None,
    as_json: JsonOption = False,
    diff: DiffOption = False,
) -> None:
    """Compare the committed inventory with the live fleet: 0 agree, 2 drift, 1 error."""
    output = output_of(ctx)
    repo = open_fleet(output, desired)
    path = repo.inventory_path
    with observing(context_of(ctx), repo) as connections:
        committed = committed_inventory(path)  # Git, while the hosts are reached
        from reconciler.workflows.observe import observe_fleet

        observation = observe_fleet(repo.desired, connections)
    if report_unreachable(output, observation):
        raise typer.Exit(1)
    from fleet.observed.client_findings import client_findings
    from fleet.observed.served import served_findings
    from fleet.report.inventory_text import inventory_diff, render_markdown
    from fleet.report.plan_text import live_line
    from reconciler.workflows.repo import find_drift

    drift = find_drift(repo, observation, worktree=True)
    served = [f"{target}: {message}" for _, target, message in served_findings(observation)]
    served += [
        f"{target}: {message}" for _, target, message in client_findings(repo.desired, observation)
    ]
    if as_json:
        output.json(
            {
                "in_sync": not drift.found and not served,
                "drift": list(drift.summary),
                "served": served,
                "live_commit": observation.live_commit,
            }
        )
    elif served:  # what is served is not what was applied: not in sync, whatever the file says
        output.line(f"live: {live_line(observation.live_commit)}")
        for line in [*served, *drift.summary]:
            output.line(f"  {line}")
        output.note("not in sync: what is served differs from what was applied", style="yellow")
    elif not drift.found:
        output.line(f"in sync: the live fleet matches {path}")
        output.line(f"live: {live_line(observation.live_commit)}")
    else:
        output.line(f"live: {live_line(observation.live_commit)}")
        for line in drift.summary:
            output.line(f"  {line}")
        if diff:
            live = render_markdown(repo.inventory(observation))
            output.raw("".join(inventory_diff(committed, live, name=str(path))))
        output.note(f"drift: the live fleet differs from {path}", style="yellow")
    raise typer.Exit(2 if drift.found or served else 0)
