"""The shared pieces of the command line: the typer app, its options, and opening desired/.

Every command module registers on `app` and takes what a run is handed from the typer
context: its `Output` (`output_of`), the way it reaches hosts (`sessions_of`: SSH, or in
tests a `tests.fakes.host.FakeSessions`) and its clock (`clock_of`), all held by one
`CliContext`; `reconciler.cli.run` runs the app with one inside the one error boundary.
Command modules import what a command needs when it runs, so that `fleet version` or
`fleet validate` do not pay for SSH, Git and the planner.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Protocol

import typer

from reconciler.cli.output import Output
from reconciler.clock import SYSTEM_CLOCK, Clock

if TYPE_CHECKING:
    from fleet.spec.models import DesiredFleet
    from reconciler.host import Sessions
    from reconciler.workflows.repo import FleetRepo


class OpenSessions(Protocol):
    """Opens the sessions of one command to the hosts of a fleet, closed on exit.

    `warm` asks to start connecting to every host at once (observing commands do, so
    their own imports overlap the SSH handshakes).
    """

    def __call__(
        self, desired: DesiredFleet, *, warm: bool = False
    ) -> AbstractContextManager[Sessions]: ...


@contextmanager
def ssh_sessions(desired: DesiredFleet, *, warm: bool = False) -> Iterator[Sessions]:
    """One SSH connection per host of desired/, opened on first use (or at once if warm)."""
    from reconciler.adapters.connections import Connections

    with Connections(desired) as connections:
        if warm:
            connections.open_all()
        yield connections


@dataclass
class CliContext:
    """What one run of the command line is handed: where it prints, how it reaches the
    hosts, and the clock its waits use."""

    output: Output = field(default_factory=Output)
    open_sessions: OpenSessions = ssh_sessions
    clock: Clock = SYSTEM_CLOCK


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


def context_of(ctx: typer.Context) -> CliContext:
    """The run's `CliContext`: the one `run` was given, or a default one (SSH, the real
    clock, the process's streams) when typer runs a command on its own."""
    found = ctx.find_object(CliContext)
    return found if found is not None else ctx.ensure_object(CliContext)


def output_of(ctx: typer.Context) -> Output:
    """The run's output."""
    return context_of(ctx).output


def sessions_of(ctx: typer.Context) -> OpenSessions:
    """How the run opens sessions to hosts."""
    return context_of(ctx).open_sessions


def clock_of(ctx: typer.Context) -> Clock:
    """The clock the run's waits use."""
    return context_of(ctx).clock


def open_fleet(output: Output, desired: Path | None) -> FleetRepo:
    """Load and validate desired/, printing warnings; ValidationFailed on errors."""
    from reconciler.workflows.desired import desired_dir, require_valid
    from reconciler.workflows.repo import FleetRepo

    root = desired_dir(desired)
    fleet, problems = require_valid(root)
    output.register_secrets(fleet)
    output.problems(problems)
    return FleetRepo(root=root, desired=fleet, warnings=problems)
