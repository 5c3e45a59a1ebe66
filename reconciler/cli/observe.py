"""`fleet inventory` and `fleet check`: read-only observation of the live fleet.

Neither starts, stops or writes anything on a host (the integration tests record every
SSH command, SFTP operation and Docker API request to prove it).
"""

from __future__ import annotations

from typing import Annotated

import typer

from fleet.errors import FleetError
from fleet.observed.models import Observation
from fleet.report.inventory import Inventory, build_inventory
from fleet.report.inventory_text import inventory_diff, render_json, render_markdown
from reconciler.adapters.connections import Connections
from reconciler.adapters.git import read_committed
from reconciler.cli.app import (
    DesiredOption,
    FleetContext,
    JsonOption,
    app,
    err,
    open_fleet,
    out,
    print_raw,
    progress,
)
from reconciler.workflows.observe import observe_fleet


def observe(ctx: FleetContext) -> Observation:
    """Observe every host of desired/ (with a spinner on a terminal)."""
    with Connections(ctx.fleet) as connections, progress(f"observing {len(ctx.fleet.hosts)} hosts"):
        return observe_fleet(ctx.fleet, connections)


def report_unreachable(observation: Observation) -> bool:
    """Print one line per host that failed; True if any did."""
    failed = [h for h in observation.hosts.values() if not h.reachable]
    for host in failed:
        err.print(f"error: {host.name}: {host.error}", style="red", markup=False)
    gateway = observation.gateway
    if gateway is not None and gateway.error:
        err.print(f"error: gateway {gateway.host}: {gateway.error}", style="red", markup=False)
    return bool(failed) or bool(gateway and gateway.error)


def write_inventory(ctx: FleetContext, inventory: Inventory) -> list[str]:
    """Write the Markdown and its JSON twin; the paths written."""
    markdown = ctx.inventory_path
    twin = markdown.with_suffix(".json")
    markdown.parent.mkdir(parents=True, exist_ok=True)
    markdown.write_text(render_markdown(inventory))
    twin.write_text(render_json(inventory))
    return [str(markdown), str(twin)]


@app.command()
def inventory(
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
    ctx = open_fleet(desired)
    observation = observe(ctx)
    document = build_inventory(ctx.fleet, observation)
    if write:
        for path in write_inventory(ctx, document):
            out.print(f"wrote {path}")
    else:
        out.print(
            render_json(document) if as_json else render_markdown(document), end="", markup=False
        )
    raise typer.Exit(1 if report_unreachable(observation) else 0)


@app.command()
def check(desired: DesiredOption = None) -> None:
    """Compare the committed inventory with the live fleet: 0 agree, 2 drift, 1 error."""
    ctx = open_fleet(desired)
    path = ctx.inventory_path
    committed = read_committed(path)
    if committed is None:
        if not path.exists():
            raise FleetError(f"no inventory at {path}: run `fleet inventory --write` and commit it")
        committed = path.read_text()
    observation = observe(ctx)
    if report_unreachable(observation):
        raise typer.Exit(1)
    live = render_markdown(build_inventory(ctx.fleet, observation))
    delta = inventory_diff(committed, live, name=str(path))
    if not delta:
        out.print(f"in sync: the live fleet matches {path}")
        raise typer.Exit(0)
    print_raw("".join(delta))
    err.print(f"drift: the live fleet differs from {path}", style="yellow")
    raise typer.Exit(2)
