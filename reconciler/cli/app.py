"""The shared pieces of the command line: the typer app, its options, and opening desired/.

Every command module registers on `app` and takes the run's `Output` from the typer
context (`output_of`); `reconciler.cli.main` runs the app inside the one error boundary.
Command modules import what a command needs when it runs, so that `fleet version` or
`fleet validate` do not pay for SSH, Git and the planner.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from reconciler.cli.output import Output

if TYPE_CHECKING:
    from reconciler.workflows.repo import FleetRepo

app = typer.Typer(
    name="fleet",
    help="Declarative GitOps for self-hosted LLM inference fleets.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

DesiredOption = Annotated[
    Path | None,
    typer.Option(
        "--desired", "-d", help="desired/ directory [default: $FLEET_DESIRED or ./desired]"
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
SeatOption = Annotated[
    list[str] | None, typer.Option("--seat", help="Only this seat (repeatable).")
]
DiffOption = Annotated[
    bool,
    typer.Option("--diff", help="Also print drift as the unified diff of the inventory."),
]
PruneOption = Annotated[
    bool, typer.Option("--prune", help="Also remove managed seats that are no longer in desired/.")
]


def output_of(ctx: typer.Context) -> Output:
    """The run's output: the one `main` made, or a new one (under a test runner)."""
    found = ctx.find_object(Output)
    return found if found is not None else ctx.ensure_object(Output)


def open_fleet(output: Output, desired: Path | None) -> FleetRepo:
    """Load and validate desired/, printing warnings; ValidationFailed on errors."""
    from reconciler.workflows.desired import desired_dir, require_valid
    from reconciler.workflows.repo import FleetRepo

    root = desired_dir(desired)
    fleet, problems = require_valid(root)
    output.register_secrets(fleet)
    output.problems(problems)
    return FleetRepo(root=root, desired=fleet, warnings=problems)
