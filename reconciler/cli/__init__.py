"""The `fleet` command line: the one place that prints errors and picks exit codes.

Exit codes: 0 success or in sync, 2 differences found (plan, check), 1 any error,
a usage mistake (an unknown command or option) included. A `FleetError` prints one red
line; anything else prints "internal error" and where the traceback was written, never
the traceback itself (locals could hold secrets).
"""

from __future__ import annotations

import copy
import gc
import sys
from collections.abc import Sequence

import typer
import typer.main
from typer.core import TyperGroup

from fleet.errors import FleetError, Interrupted, ValidationFailed
from reconciler.cli import apply as cli_apply
from reconciler.cli import bench as cli_bench
from reconciler.cli import fit as cli_fit
from reconciler.cli import importer as cli_importer
from reconciler.cli import observe as cli_observe
from reconciler.cli import plan as cli_plan
from reconciler.cli import reconcile as cli_reconcile
from reconciler.cli import spec as cli_spec
from reconciler.cli import status as cli_status
from reconciler.cli.app import CliContext, app
from reconciler.cli.explain import explain_app
from reconciler.cli.keys import keys_app
from reconciler.cli.models import models_app
from reconciler.cli.output import Output

app.add_typer(explain_app, name="explain", help="Show the facts fleet reads off a log or model.")
app.add_typer(models_app, name="models", help="List the models on every host; prune unused ones.")
app.add_typer(keys_app, name="keys", help="Rotate, confirm and revoke gateway clients' keys.")
COMMAND_MODULES = (
    cli_spec,
    cli_observe,
    cli_plan,
    cli_apply,
    cli_importer,
    cli_bench,
    cli_fit,
    cli_reconcile,
    cli_status,
)
# typer (from 0.26 on) vendors click: its usage errors derive from TyperException
USAGE_ERRORS: tuple[type[Exception], ...] = (typer.TyperException,)


OFFLINE_COMMANDS = frozenset({"validate", "schema", "version", "explain"})
"""Commands that read a few local files, print and exit: they run with Python's cycle
collector off. Their start-up builds tens of thousands of objects (modules, classes,
pydantic's schemas), none of them garbage, and the collector walked them again and again
as they grew (2% of `fleet validate`'s instructions); what they build after holds no
cycles worth collecting before the process ends. Every other command keeps it on."""


def main() -> None:
    """Entry point: run the app inside the one error boundary."""
    args = sys.argv[1:]
    if _command_name(args) in OFFLINE_COMMANDS:
        gc.disable()
    try:
        code = run(args, CliContext())
    finally:
        # Nothing is left to collect but what the interpreter frees on exit: without the
        # final cyclic collection over every module's objects (pydantic's schemas,
        # paramiko, cryptography), an observing command exits ~0.07 s sooner.
        gc.freeze()
    sys.exit(code)


def run(args: Sequence[str], context: CliContext) -> int:
    """Run one command line with what `context` hands it (SSH and the real clock, or a
    test's fake hosts and clock); its exit code. Every error is printed here."""
    output = context.output
    try:
        command = command_for(args)
        code = command.main(list(args), standalone_mode=False, prog_name="fleet", obj=context)
    except typer.Exit as done:
        code = done.exit_code
    except ValidationFailed as failure:
        from fleet.spec.problems import Problem

        output.problems([p for p in failure.problems if isinstance(p, Problem)])
        output.error(str(failure))
        return 1
    except Interrupted as stopped:  # SIGTERM/SIGINT: 128 + the signal, as shells report it
        output.error(str(stopped))
        return 128 + stopped.signal_number
    except FleetError as failure:
        output.error(str(failure))
        return 1
    except typer.Abort:
        output.note("aborted", style="red")
        return 1
    except USAGE_ERRORS as failure:
        return _usage_error(output, failure)
    except Exception as failure:  # the boundary: anything else is our bug
        return _internal_error(output, failure)
    return code if isinstance(code, int) else 0


def command_for(args: Sequence[str]) -> TyperGroup:
    """The command group for this command line, with only the named command built.

    typer builds a click command for every registered function on each run (~10 ms of
    a 0.17 s start-up); a run needs one. Without a known command name (`fleet`,
    `fleet --help`, `fleet nosuch`) the whole group is built, so help lists every
    command and an unknown name gets typer's own message and suggestions.
    """
    name = _command_name(args)
    narrow = copy.copy(app)
    narrow.registered_commands = [c for c in app.registered_commands if _name_of(c) == name]
    narrow.registered_groups = [g for g in app.registered_groups if g.name == name]
    if not narrow.registered_commands and not narrow.registered_groups:
        narrow = app
    return typer.main.get_group(narrow)


def _command_name(args: Sequence[str]) -> str | None:
    """The command a command line names (its first word), None for none (`fleet --help`)."""
    return args[0] if args and not args[0].startswith("-") else None


def _name_of(command: typer.models.CommandInfo) -> str:
    if command.name:
        return command.name
    callback = command.callback
    return typer.main.get_command_name(callback.__name__ if callback else "")


def _usage_error(output: Output, failure: Exception) -> int:
    """A mistake on the command line: the usage line and one message, exit 1 (2 is drift)."""
    context = getattr(failure, "ctx", None)
    if context is not None:
        output.note(context.get_usage())
        output.note(f"Try '{context.command_path} --help' for help.")
    message = getattr(failure, "format_message", lambda: str(failure))()
    output.error(message)
    return 1


def _internal_error(output: Output, failure: BaseException) -> int:
    import tempfile
    import traceback

    with tempfile.NamedTemporaryFile(
        "w", prefix="fleet-crash-", suffix=".txt", delete=False
    ) as report:
        traceback.print_exception(failure, file=report)
    output.note(
        f"internal error: {type(failure).__name__}: {failure} (traceback written to {report.name})",
        style="red",
    )
    return 1
