"""The `fleet` command line: the one place that prints errors and picks exit codes.

Exit codes: 0 success or in sync, 2 differences found (plan, check), 1 any error,
a usage mistake (an unknown command or option) included.
A `FleetError` prints one red line; anything else prints "internal error" and where the
traceback was written, never the traceback itself (locals could hold secrets).
"""

from __future__ import annotations

import json
import sys
import tempfile
import traceback
from typing import Annotated

import click
import typer

from fleet import __version__
from fleet.errors import FleetError, ValidationFailed
from fleet.report.schema import fleet_schema
from fleet.spec.problems import Problem, Severity
from reconciler.cli import apply as cli_apply
from reconciler.cli import observe as cli_observe
from reconciler.cli import plan as cli_plan
from reconciler.cli.app import DesiredOption, JsonOption, app, err, out, print_problems
from reconciler.cli.explain import explain_app
from reconciler.workflows.desired import desired_dir, load_desired

app.add_typer(explain_app, name="explain", help="Show the facts fleet reads off a log or model.")
COMMAND_MODULES = (cli_observe, cli_plan, cli_apply)


@app.command()
def validate(desired: DesiredOption = None, as_json: JsonOption = False) -> None:
    """Check desired/ offline: syntax, schema and fleet rules. Never contacts a host."""
    root = desired_dir(desired)
    loaded, problems = load_desired(root)
    errors = [p for p in problems if p.severity is Severity.ERROR]
    if as_json:
        payload = [p.model_dump(mode="json") for p in problems]
        out.print_json(json.dumps(payload, sort_keys=True))
    else:
        print_problems(problems)
        if not errors and loaded.fleet is not None:
            fleet = loaded.fleet
            out.print(
                f"{root}: valid ({len(fleet.hosts)} hosts, {len(fleet.seats)} seats, "
                f"{len(problems)} warnings)"
            )
    raise typer.Exit(1 if errors else 0)


@app.command()
def schema(
    kind: Annotated[
        str, typer.Argument(help="fleet, host, seat, gateway, all (desired/), plan or inventory")
    ] = "all",
) -> None:
    """Print a JSON Schema: of desired/ files (for editors), of the plan or inventory JSON."""
    out.print_json(json.dumps(fleet_schema(kind), sort_keys=True))


@app.command()
def version() -> None:
    """Print fleet's version."""
    out.print(f"fleet {__version__}")


def main() -> None:
    """Entry point: run the app inside the one error boundary."""
    try:
        code = app(standalone_mode=False, prog_name="fleet")
    except typer.Exit as done:
        code = done.exit_code
    except ValidationFailed as failure:
        print_problems([p for p in failure.problems if isinstance(p, Problem)])
        err.print(f"error: {failure}", style="red", markup=False)
        sys.exit(1)
    except FleetError as failure:
        err.print(f"error: {failure}", style="red", markup=False)
        sys.exit(1)
    except (click.exceptions.Abort, typer.Abort):
        err.print("aborted", style="red")
        sys.exit(1)
    except USAGE_ERRORS as failure:
        sys.exit(_usage_error(failure))
    except Exception as failure:  # the boundary: anything else is our bug
        sys.exit(_internal_error(failure))
    sys.exit(code if isinstance(code, int) else 0)


USAGE_ERRORS: tuple[type[Exception], ...] = (click.ClickException, typer.TyperException)


def _usage_error(failure: Exception) -> int:
    """A mistake on the command line: the usage line and one message, exit 1 (2 is drift)."""
    context = getattr(failure, "ctx", None)
    if context is not None:
        err.print(context.get_usage(), markup=False)
        err.print(f"Try '{context.command_path} --help' for help.", markup=False)
    message = getattr(failure, "format_message", lambda: str(failure))()
    err.print(f"error: {message}", style="red", markup=False)
    return 1


def _internal_error(failure: BaseException) -> int:
    with tempfile.NamedTemporaryFile(
        "w", prefix="fleet-crash-", suffix=".txt", delete=False
    ) as report:
        traceback.print_exception(failure, file=report)
    err.print(
        f"internal error: {type(failure).__name__}: {failure} (traceback written to {report.name})",
        style="red",
        markup=False,
    )
    return 1
