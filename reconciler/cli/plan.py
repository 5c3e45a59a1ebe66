"""`fleet plan` and `fleet render`: what apply would do and write, without doing it.

Both are read-only on the hosts. `plan` exits 0 when nothing is to do, 2 when changes
are pending, 1 on an error (an unreachable host, a blocker, invalid desired/). Building,
saving and loading plans is `reconciler.workflows.plans`; this module parses and prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from reconciler.cli.app import (
    DesiredOption,
    DiffOption,
    JsonOption,
    PruneOption,
    SeatOption,
    app,
    context_of,
    open_fleet,
    output_of,
    sessions_of,
)
from reconciler.cli.output import Output

if TYPE_CHECKING:
    from fleet.plan.plan import Plan
    from fleet.spec.models import DesiredFleet


def print_plan(output: Output, plan: Plan, *, diff: bool = False) -> None:
    """The plan on the terminal, coloured."""
    from fleet.report.plan_text import plan_lines

    for style, text in plan_lines(plan, diff=diff):
        output.out.print(text, style=style, markup=False)


@app.command()
def plan(
    ctx: typer.Context,
    desired: DesiredOption = None,
    as_json: JsonOption = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Print a PR comment.")] = False,
    out_file: Annotated[
        Path | None, typer.Option("--out", help="Save the plan for `fleet apply FILE`.")
    ] = None,
    prune: PruneOption = False,
    seat: SeatOption = None,
    diff: DiffOption = False,
) -> None:
    """Diff desired/ against the live fleet and show what apply would do (read-only)."""
    from reconciler.cli.observe import observing, report_unreachable

    output = output_of(ctx)
    repo = open_fleet(output, desired)
    with observing(context_of(ctx), repo) as connections:
        from reconciler.workflows.plans import build_plan, save_plan  # beside the handshakes

        result, observation = build_plan(repo, connections, prune=prune, seats=seat)
    from fleet.report.plan_text import plan_markdown

    if as_json:
        output.json(result.model_dump(mode="json"))
    elif markdown:
        output.raw(plan_markdown(result))
    else:
        print_plan(output, result, diff=diff)
    if out_file is not None:
        save_plan(result, out_file)
        output.note(f"saved plan to {out_file}; apply it with `fleet apply {out_file}`")
    failed = report_unreachable(output, observation)
    raise typer.Exit(1 if failed or result.blockers else 0 if result.empty else 2)


@app.command()
def render(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(help="A host name, or `gateway`.")],
    desired: DesiredOption = None,
    current: Annotated[
        Path | None,
        typer.Option(
            "--current", help="Gateway config to edit instead of the one on the gateway host."
        ),
    ] = None,
    declared: Annotated[
        bool,
        typer.Option(
            "--declared",
            help="Render a host as desired/ declares it, without asking the host which of "
            "its two ports each seat serves on now (after a surge: the second).",
        ),
    ] = False,
) -> None:
    """Print what apply would write: a host's compose file (or units), or the gateway config.

    A host is asked, read-only, which port each seat's live copy serves on, as apply does."""
    from fleet.errors import FleetError
    from fleet.gateways import kind_of
    from fleet.runtimes import runtime_for

    output = output_of(ctx)
    repo = open_fleet(output, desired)
    fleet = repo.desired
    if target != "gateway" or fleet.gateway is None:
        if target not in fleet.hosts:
            known = ", ".join(sorted(fleet.hosts))
            raise FleetError(f"nothing to render for {target!r}: name a host ({known}) or gateway")
        if not declared:
            fleet = _on_live_ports(ctx, fleet, target)
        output.raw(runtime_for(fleet.hosts[target]).render_host(fleet, target))
        return
    gateway = fleet.gateway
    if current is not None:
        text = current.read_text()
    else:
        with sessions_of(ctx)(fleet) as connections:
            found = connections.get(gateway.host).read_file(gateway.config_path)
        if found is None:
            raise FleetError(f"{gateway.config_path} does not exist on {gateway.host}")
        text = found
    output.raw(kind_of(fleet.gateway).render_config(text, fleet, frozenset()))


def _on_live_ports(ctx: typer.Context, fleet: DesiredFleet, host: str) -> DesiredFleet:
    """desired/ with the host's seats on the ports their live copies serve on."""
    from fleet.errors import FleetError
    from fleet.plan.live_port import follow_live_ports
    from reconciler.workflows.observe import observe_fleet

    with sessions_of(ctx)(fleet) as connections:
        observation = observe_fleet(fleet, connections, [host])
    seen = observation.hosts[host]
    if not seen.reachable:
        raise FleetError(f"{host}: {seen.error} (`--declared` renders without asking it)")
    return follow_live_ports(fleet, observation)
