"""Facts that own their command, and the one-round-trip script assembled from them.

A `Fact` (pyinfra's `FactBase`) keeps in one place the shell command that gathers it, the
sections its output is marked with, the pure `process` that turns them into a frozen
model, its `default` (what the fact is when its command printed nothing, e.g. a host
without the tool it `requires_command`). Each command runs in a subshell of its own, so
no shell state passes from one fact to another; they share only the prelude's `mark`,
which prints `@@FLEET-<boundary> <section> <argument>` before each part of the output.

Host content (a model's config.json, a log, a unit file) is printed raw inside those
parts, so the marker carries a per-run `boundary`: a random token the planning machine
draws for each run (`reconciler.workflows.observe`) and that no file or log on the host can
know in advance. A line that merely starts with `@@FLEET ` is content, never a section;
without a boundary (recorded outputs in tests) the marker is the bare `@@FLEET `.

A section's argument is often a name the host chose (a model directory, a unit file): one
with a newline would end the marker's line early and push the rest of the name into the
body. `mark` prints such an argument (and one starting with `%`) as `%` and its bytes in
hex (`od`, only then), which `split_sections` decodes: a name is one argument, whatever
bytes it holds. Listings of names inside a body are NUL-separated for the same reason
(`fleet.facts.model_files`, the engines' `/proc/<pid>/cmdline`).

`script` joins fact entries into the script a host runs with `sh -s` (one SSH round trip:
the host-wide facts are in `fleet.facts.host_facts`, the GPU ones in `fleet.facts.gpu_facts`,
a runtime's own in `fleet.runtimes`); `read_facts` splits what it printed and hands each
fact its own sections (`FactOutput[fact]`). Every command only reads. Called by
`fleet.runtimes.host_script`/`seat_script` (building) and `fleet.observed.assemble`
(reading).
"""

from __future__ import annotations

import re
import shlex
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

MARK = "@@FLEET "  # the marker without a boundary: recorded outputs in tests
END = "end"  # the script's last section: without it the output was cut short
BOUNDARY = re.compile(r"[A-Za-z0-9]{1,64}")
LOG_LINES = 20000  # the tail of a log read per seat instance
T = TypeVar("T")

Parts = Mapping[str, Mapping[str, str]]  # section -> argument -> body


@dataclass(frozen=True)
class Fact(Generic[T]):
    """One fact: its command, the sections it prints, its parser and its default."""

    name: str
    command: Callable[..., str]  # the fact's arguments (paths, a selector) -> shell
    sections: tuple[str, ...]
    process: Callable[[Parts], T]
    default: T
    requires_command: str | None = None

    def entry(self, *args: Any) -> str:
        """The fact's command as one entry of the script: in a subshell of its own, and
        only where the command it requires exists."""
        body = f"(\n{self.command(*args).rstrip()}\n)\n"
        if self.requires_command is None:
            return body
        found = f"{{ command -v {shlex.quote(self.requires_command)}; }} >/dev/null 2>&1"
        return f"if {found}; then\n{body}fi\n"

    def read(self, parts: Parts) -> T:
        """The fact from the script's sections: its default when it printed none."""
        mine = {s: parts.get(s, {}) for s in self.sections}
        if not any(mine.values()):
            return self.default
        return self.process(mine)


def marker(boundary: str = "") -> str:
    """What starts a section's first line: `@@FLEET-<boundary> ` (bare without one)."""
    if not boundary:
        return MARK
    if not BOUNDARY.fullmatch(boundary):
        raise ValueError(f"a boundary is letters and digits: {boundary!r}")
    return f"{MARK.rstrip()}-{boundary} "


# A marker's argument holding a newline, or starting with `%`, goes as `%<hex>` (od).
_ENCODE = (
    '  case $a in *"$nl"*|"$1 %"*) a="$1 %$(shift; printf %s "$*" |'
    " od -An -v -tx1 | tr -d ' \\n')\";; esac\n"
)


def script(entries: Iterable[str], boundary: str = "") -> str:
    """The script of these fact entries, ending with its `end` mark; its sections start
    with `marker(boundary)`, their arguments one line each (`_ENCODE`)."""
    prelude = (
        "set -u\nnl='\n'\nmark() {\n  a=$*\n"
        + _ENCODE
        + "  printf '\\n"
        + marker(boundary)
        + '%s\\n\' "$a"\n}\n'
    )
    return prelude + "".join(entries) + f"mark {END}\n"


def decode_argument(arg: str) -> str:
    """A section's argument as the host named it: `%<hex>` is the bytes `mark` encoded."""
    if not arg.startswith("%"):
        return arg
    try:
        return bytes.fromhex(arg[1:]).decode(errors="replace")
    except ValueError:
        return arg


def split_sections(output: str, boundary: str = "") -> list[tuple[str, str, str]]:
    """(section, argument, body) for each `marker(boundary)section argument` part, in
    order; a line that starts with any other marker is part of a body."""
    mark = marker(boundary)
    sections: list[tuple[str, str, str]] = []
    kind, arg, body = "", "", []  # type: tuple[str, str, list[str]]
    for line in output.split("\n"):
        if line.startswith(mark):
            if kind:
                sections.append((kind, arg, "\n".join(body).strip("\n")))
            kind, _, arg = line[len(mark) :].partition(" ")
            arg, body = decode_argument(arg), []
        else:
            body.append(line)
    if kind:
        sections.append((kind, arg, "\n".join(body).strip("\n")))
    return sections


class FactOutput:
    """What a fact script printed, read fact by fact: `output[fact]` is that fact."""

    def __init__(self, output: str, boundary: str = "") -> None:
        parts: dict[str, dict[str, str]] = defaultdict(dict)
        for kind, arg, body in split_sections(output, boundary):
            parts[kind][arg] = body
        self.parts: Parts = parts
        self.finished = END in parts

    def __getitem__(self, fact: Fact[T]) -> T:
        return fact.read(self.parts)


def body(parts: Parts, section: str, arg: str = "") -> str:
    """One part's text ('' when absent): for a fact's `process`."""
    return parts.get(section, {}).get(arg, "")
