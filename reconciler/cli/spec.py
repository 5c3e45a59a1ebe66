"""`fleet validate`, `fleet schema` and `fleet version`: offline, never contact a host."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from reconciler.cli.app import DesiredOption, JsonOption, app, output_of

if TYPE_CHECKING:
    from fleet.spec.problems import Problem


@app.command()
def validate(
    ctx: typer.Context, desired: DesiredOption = None, as_json: JsonOption = False
) -> None:
    """Check desired/ offline: syntax, schema and fleet rules. Never contacts a host."""
    from fleet.spec.problems import has_errors
    from reconciler.workflows.desired import desired_dir, load_desired

    output = output_of(ctx)
    root = desired_dir(desired)
    loaded, problems = load_desired(root)
    if as_json:
        output.raw(_problems_json(problems))
    else:
        output.problems(problems)
        if not has_errors(problems) and loaded.fleet is not None:
            fleet = loaded.fleet
            output.line(
                f"{root}: valid ({len(fleet.hosts)} hosts, {len(fleet.seats)} seats, "
                f"{len(problems)} warnings)"
            )
    raise typer.Exit(1 if has_errors(problems) else 0)


def _problems_json(problems: list[Problem]) -> str:
    import json

    payload = [p.model_dump(mode="json") for p in problems]
    return json.dumps(payload, indent=2, sort_keys=True) + "\n"


@app.command()
def schema(
    ctx: typer.Context,
    kind: Annotated[
        str,
        typer.Argument(
            help="fleet, host, seat, gateway, all (desired/), plan, inventory or status"
        ),
    ] = "all",
) -> None:
    """Print a JSON Schema: of desired/ files (for editors), of the plan, inventory or
    status JSON."""
    from fleet.report.schema import fleet_schema

    output_of(ctx).json(fleet_schema(kind))


@app.command()
def version(ctx: typer.Context) -> None:
    """Print fleet's version."""
    from fleet import __version__

    output_of(ctx).line(f"fleet {__version__}")
