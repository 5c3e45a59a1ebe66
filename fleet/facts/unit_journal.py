"""A unit's output since its last start, from `journalctl -u UNIT -o short-iso --no-pager`.

Called by the systemd runtime's observe and health gate: the engine's startup log is what
its process printed after systemd last started the unit (the log a container's `docker
logs` gives for its current run). Each line reads `TIMESTAMP HOST IDENT[PID]: MESSAGE`;
systemd's own lines come from `systemd[1]` (`Started <unit> - <description>.`, `Main process
exited, code=killed, status=9/KILL`, `Scheduled restart job, restart counter is at N.`).
The output of a run can arrive after systemd's line about its exit, so a run is cut at
systemd's `Started` line, not at its exit.
"""

from __future__ import annotations

import re

from fleet.base import CoreModel
from fleet.facts._text import clean_lines

_LINE = re.compile(
    r"^(?P<at>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?[+-]\d{4}) (?P<host>\S+) "
    r"(?P<ident>[^\s\[]+)(?:\[(?P<pid>\d+)\])?: (?P<message>.*)$"
)
_STARTED = re.compile(r"^Started (?P<unit>\S+)")
_EXITED = re.compile(
    r"^(?P<unit>\S+): Main process exited, code=(?P<code>\w+), status=(?P<status>\S+)"
)


class UnitRun(CoreModel):
    """The latest run of a unit in its journal."""

    started_at: str | None = None  # when systemd logged `Started` (None: not in the journal)
    lines: tuple[str, ...] = ()  # what the unit's processes printed since, without prefixes
    exits: tuple[str, ...] = ()  # systemd's `code=..., status=...` of each exit in the journal
    restarts_logged: int = 0  # `Scheduled restart job` lines in the whole journal text

    @property
    def text(self) -> str:
        """The run's output as one text (what an engine's log parser reads)."""
        return "\n".join(self.lines) + ("\n" if self.lines else "")


def parse_unit_journal(text: str, unit: str) -> UnitRun:
    """The last run of `unit` (e.g. `fleet-coder.service`) in a journalctl output."""
    started_at: str | None = None
    lines: list[str] = []
    exits: list[str] = []
    restarts = 0
    for raw in clean_lines(text):
        match = _LINE.match(raw)
        if match is None:
            continue
        message = match.group("message")
        if match.group("ident") != "systemd" or match.group("pid") != "1":
            lines.append(message)
            continue
        started = _STARTED.match(message)
        exited = _EXITED.match(message)
        if started and started.group("unit") == unit:
            started_at, lines = match.group("at"), []
        elif exited and exited.group("unit") == unit:
            exits.append(f"code={exited.group('code')}, status={exited.group('status')}")
        elif message.startswith(f"{unit}: Scheduled restart job"):
            restarts += 1
    return UnitRun(
        started_at=started_at, lines=tuple(lines), exits=tuple(exits), restarts_logged=restarts
    )
