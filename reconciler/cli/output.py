"""Where the command line prints: one `Output` per run, handed to every command.

Results go to stdout, progress, warnings and errors to stderr; both streams replace every
known secret value with `***` as they write (the values of the environment variables
desired/ references, plus anything shaped like a known key). rich is imported on first
use, so a command that prints nothing styled does not pay for it.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TextIO

from fleet.secrets import redact, referenced_variables

if TYPE_CHECKING:
    from rich.console import Console

    from fleet.spec.models import DesiredFleet
    from fleet.spec.problems import Problem


class RedactingStream:
    """A text stream that replaces every registered secret value with `***` as it writes."""

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


class Output:
    """The two streams of one command-line run, and the ways fleet prints on them."""

    def __init__(self, stdout: TextIO | None = None, stderr: TextIO | None = None) -> None:
        self.stdout = RedactingStream(stdout or sys.stdout)
        self.stderr = RedactingStream(stderr or sys.stderr)
        self._consoles: dict[str, Console] = {}

    def _console(self, which: str) -> Console:
        if which not in self._consoles:
            from rich.console import Console

            stream = self.stdout if which == "out" else self.stderr
            self._consoles[which] = Console(
                file=stream,  # type: ignore[arg-type]
                soft_wrap=True,
                highlight=False,
                emoji=False,
            )
        return self._consoles[which]

    @property
    def out(self) -> Console:
        """The stdout console (for tables and styled result lines)."""
        return self._console("out")

    @property
    def err(self) -> Console:
        """The stderr console (progress, warnings, errors)."""
        return self._console("err")

    def line(self, text: str, style: str | None = None) -> None:
        """One result line on stdout, printed as it is (no markup)."""
        if style is None:
            self.raw(text + "\n")
        else:
            self.out.print(text, style=style, markup=False)

    def note(self, text: str, style: str | None = None) -> None:
        """One line on stderr: progress, a hint, a warning."""
        self.err.print(text, style=style, markup=False)

    def error(self, message: str) -> None:
        """The one red line an error gets."""
        self.err.print(f"error: {message}", style="red", markup=False)

    def raw(self, text: str) -> None:
        """A document (Markdown, JSON, YAML, a diff) to stdout as it is."""
        self.stdout.write(text)
        self.stdout.flush()

    def json(self, payload: Any) -> None:
        """Sorted, indented JSON on stdout."""
        self.raw(json.dumps(payload, indent=2, sort_keys=True) + "\n")

    def problems(self, problems: list[Problem]) -> None:
        """Each problem on one line, errors red and warnings yellow."""
        for problem in problems:
            style = "red" if problem.severity.value == "error" else "yellow"
            self.note(str(problem), style=style)

    def register_secrets(self, desired: DesiredFleet) -> None:
        """Redact the values of every environment variable desired/ references."""
        names = set(referenced_variables(desired.model_dump_json()))
        values = [os.environ[n] for n in sorted(names) if os.environ.get(n)]
        for stream in (self.stdout, self.stderr):
            stream.secrets = values

    @contextlib.contextmanager
    def progress(self, message: str) -> Iterator[None]:
        """A spinner on stderr while something slow runs (only on a terminal)."""
        if self.stderr.isatty():
            with self.err.status(message):
                yield
        else:
            yield
