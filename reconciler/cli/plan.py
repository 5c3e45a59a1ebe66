"""`fleet plan` and `fleet render`: what apply would do and write, without doing it.

Both are read-only on the hosts. `plan` exits 0 when nothing is to do, 2 when changes
are pending, 1 on an error (an unreachable host, a blocker, invalid desired/).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from fleet.errors import FleetError
from fleet.observed.models import Observation
from fleet.plan.fingerprint import fingerprint
from fleet.plan.plan import Plan, make_plan
from fleet.render.compose import render_compose
from fleet.render.gateway import render_gateway_config
from fleet.report.inventory import build_inventory
from fleet.report.inventory_text import inventory_diff, render_markdown
from fleet.report.plan_text import plan_lines, plan_markdown
from reconciler.adapters.connections import Connections
from reconciler.adapters.git import head_commit, read_committed
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
from reconciler.cli.observe import report_unreachable
from reconciler.workflows.observe import observe_fleet

PLAN_FORMAT = "fleet-plan/1"
SeatOption = Annotated[
    list[str] | None, typer.Option("--seat", help="Only this seat (repeatable).")
]
PruneOption = Annotated[
    bool, typer.Option("--prune", help="Also remove managed seats that are no longer in desired/.")
]


def build_plan(
    ctx: FleetContext,
    connections: Connections,
    *,
    prune: bool = False,
    seats: list[str] | None = None,
) -> tuple[Plan, Observation]:
    """Observe, then plan, with drift and the fingerprint of what the plan relies on."""
    unknown = sorted(set(seats or ()) - set(ctx.fleet.seats))
    if unknown and not prune:
        raise FleetError(f"no such seat in desired/: {', '.join(unknown)}")
    with progress(f"observing {len(ctx.fleet.hosts)} hosts"):
        observation = observe_fleet(ctx.fleet, connections)
    plan = make_plan(
        ctx.fleet,
        observation,
        prune=prune,
        only_seats=frozenset(seats or ()),
        desired_commit=head_commit(ctx.root),
        drift=drift_lines(ctx, observation),
    )
    prints = fingerprint(ctx.fleet, observation, plan.actions)
    return plan.model_copy(update={"fingerprint": prints}), observation


def drift_lines(ctx: FleetContext, observation: Observation) -> tuple[str, ...]:
    """Changed lines between the committed inventory and the live one (none if uncommitted)."""
    committed = read_committed(ctx.inventory_path)
    if committed is None:
        return ()
    live = render_markdown(build_inventory(ctx.fleet, observation))
    delta = inventory_diff(committed, live, context=0)
    return tuple(
        line.rstrip("\n") for line in delta if line[:1] in "+-" and line[:3] not in ("+++", "---")
    )


def save_plan(plan: Plan, path: Path) -> None:
    """Write a plan for `fleet apply PLAN`."""
    path.write_text(
        json.dumps(
            {"format": PLAN_FORMAT, "plan": plan.model_dump(mode="json")}, indent=2, sort_keys=True
        )
        + "\n"
    )


def load_plan(path: Path) -> Plan:
    """Read a saved plan; FleetError if it is not one."""
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise FleetError(f"cannot read plan {path}: {error}") from error
    if not isinstance(data, dict) or data.get("format") != PLAN_FORMAT:
        raise FleetError(f"{path} is not a fleet plan ({PLAN_FORMAT})")
    return Plan.model_validate(data["plan"])


def print_plan(plan: Plan) -> None:
    """The plan on the terminal, coloured."""
    for style, text in plan_lines(plan):
        out.print(text, style=style, markup=False)


@app.command()
def plan(
    desired: DesiredOption = None,
    as_json: JsonOption = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Print a PR comment.")] = False,
    out_file: Annotated[
        Path | None, typer.Option("--out", help="Save the plan for `fleet apply FILE`.")
    ] = None,
    prune: PruneOption = False,
    seat: SeatOption = None,
) -> None:
    """Diff desired/ against the live fleet and show what apply would do (read-only)."""
    ctx = open_fleet(desired)
    with Connections(ctx.fleet) as connections:
        result, observation = build_plan(ctx, connections, prune=prune, seats=seat)
    if as_json:
        print_raw(json.dumps(result.model_dump(mode="json"), indent=2, sort_keys=True) + "\n")
    elif markdown:
        print_raw(plan_markdown(result))
    else:
        print_plan(result)
    if out_file is not None:
        save_plan(result, out_file)
        err.print(f"saved plan to {out_file}; apply it with `fleet apply {out_file}`")
    failed = report_unreachable(observation)
    raise typer.Exit(1 if failed or result.blockers else 0 if result.empty else 2)


@app.command()
def render(
    target: Annotated[str, typer.Argument(help="A host name, or `gateway`.")],
    desired: DesiredOption = None,
    current: Annotated[
        Path | None,
        typer.Option(
            "--current", help="Gateway config to edit instead of the one on the gateway host."
        ),
    ] = None,
) -> None:
    """Print what apply would write: a host's compose file, or the gateway config."""
    ctx = open_fleet(desired)
    if target != "gateway" or ctx.fleet.gateway is None:
        if target not in ctx.fleet.hosts:
            known = ", ".join(sorted(ctx.fleet.hosts))
            raise FleetError(f"nothing to render for {target!r}: name a host ({known}) or gateway")
        print_raw(render_compose(ctx.fleet, target))
        return
    gateway = ctx.fleet.gateway
    if current is not None:
        text = current.read_text()
    else:
        with Connections(ctx.fleet) as connections:
            found = connections.get(gateway.host).read_file(gateway.config_path)
        if found is None:
            raise FleetError(f"{gateway.config_path} does not exist on {gateway.host}")
        text = found
    print_raw(render_gateway_config(text, ctx.fleet))
