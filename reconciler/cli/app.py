"""The shared pieces of the command line: the typer app, consoles, options, progress.

Every command module registers on `app`; `reconciler.cli.main` runs it inside the one
error boundary.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, TextIO

import typer
from rich.console import Console

from fleet.secrets import redact, referenced_variables
from fleet.spec.models import DesiredFleet
from fleet.spec.problems import Problem, Severity
from reconciler.workflows.desired import desired_dir, require_valid

app = typer.Typer(
    name="fleet",
    help="Declarative GitOps for self-hosted LLM inference fleets.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


class RedactingStream:
    """A text stream that replaces every known secret value with `***` as it writes.

    The secrets are the values of the environment variables desired/ references
    (`${VAR}`), registered by `open_fleet`, plus anything shaped like a known key.
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.secrets: list[str] = []

    def write(self, text: str) -> int:
        return self.stream.write(redact(text, self.secrets))

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()


stdout, stderr = RedactingStream(sys.stdout), RedactingStream(sys.stderr)
out = Console(file=stdout, soft_wrap=True, highlight=False, emoji=False)  # type: ignore[arg-type]
err = Console(file=stderr, soft_wrap=True, highlight=False, emoji=False)  # type: ignore[arg-type]


def print_raw(text: str) -> None:
    """A document (Markdown, JSON, YAML, a diff) to stdout as it is, secrets redacted."""
    stdout.write(text)
    stdout.flush()


def register_secrets(fleet: DesiredFleet) -> None:
    """Redact the values of every environment variable desired/ references."""
    names = set(referenced_variables(fleet.model_dump_json()))
    values = [os.environ[n] for n in sorted(names) if os.environ.get(n)]
    for stream in (stdout, stderr):
        stream.secrets = values


DesiredOption = Annotated[
    Path | None,
    typer.Option(
        "--desired", "-d", help="desired/ directory [default: $FLEET_DESIRED or ./desired]"
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]


@dataclass(frozen=True)
class FleetContext:
    """desired/ loaded and valid, and where it lives."""

    root: Path
    fleet: DesiredFleet
    warnings: list[Problem]

    @property
    def repo_root(self) -> Path:
        """The fleet repository: the directory holding desired/."""
        return self.root.resolve().parent

    @property
    def inventory_path(self) -> Path:
        """The Markdown inventory; its JSON sits beside it."""
        return self.repo_root / self.fleet.settings.inventory.path


def open_fleet(desired: Path | None) -> FleetContext:
    """Load and validate desired/, printing warnings; ValidationFailed on errors."""
    root = desired_dir(desired)
    fleet, problems = require_valid(root)
    register_secrets(fleet)
    print_problems(problems)
    return FleetContext(root=root, fleet=fleet, warnings=problems)


def print_problems(problems: list[Problem]) -> None:
    """Each problem on one line, errors red and warnings yellow."""
    for problem in problems:
        style = "red" if problem.severity is Severity.ERROR else "yellow"
        err.print(str(problem), style=style, markup=False)


@contextlib.contextmanager
def progress(message: str) -> Iterator[None]:
    """A spinner on stderr while something slow runs (only on a terminal)."""
    if err.is_terminal:
        with err.status(message):
            yield
    else:
        yield
