"""A systemd unit's state, from `systemctl show UNIT... -p PROPS` (or a full `show`).

Called by the systemd runtime's observe: for each seat's unit, whether it runs, its main
pid (whose `/proc/<pid>/cmdline` is the engine's argv), how often systemd restarted it
(`NRestarts`), the unit file it was loaded from, and whether that file changed on disk
since (`NeedDaemonReload`: a hand edit). `show` prints `Key=value` lines in systemd's own
order, one block per unit separated by an empty line; a unit systemd has no file for
shows `LoadState=not-found`. `ExecStart` prints `{ path=... ; argv[]=... ; ... }`, whose
argv words are joined by spaces without quoting (so it is compared as that text, see
`exec_start_text`) and keep a literal `$` doubled as the unit file wrote it.
"""

from __future__ import annotations

import re

from fleet.base import CoreModel
from fleet.facts._text import clean_lines

PROPERTIES = (
    "Id",
    "LoadState",
    "ActiveState",
    "SubState",
    "Result",
    "MainPID",
    "NRestarts",
    "ExecStart",
    "FragmentPath",
    "NeedDaemonReload",
    "ActiveEnterTimestamp",
    "ExecMainStartTimestamp",
    "ExecMainCode",
    "ExecMainStatus",
    "InvocationID",
    "UnitFileState",
    "Environment",
    "EnvironmentFiles",
)
CLD_KILLED, CLD_DUMPED = 2, 3  # ExecMainCode, from waitid(2)'s si_code
_EXEC = re.compile(r"\{ path=(?P<path>[^;]*?) ; argv\[\]=(?P<argv>.*?) ; ignore_errors=")


class UnitStatus(CoreModel):
    """What systemd says of one unit."""

    unit: str
    load_state: str | None = None  # loaded, not-found, masked, bad-setting
    active_state: str | None = None  # active, activating, deactivating, inactive, failed
    sub_state: str | None = None  # running, auto-restart, dead, failed, ...
    result: str | None = None  # success, exit-code, signal, ...
    main_pid: int | None = None  # None when no process runs (systemd says 0)
    restarts: int = 0  # NRestarts: the automatic restarts systemd counted (Restart=)
    exec_path: str | None = None
    exec_start: str | None = None  # the argv text as `show` prints it
    fragment_path: str | None = None
    need_daemon_reload: bool = False
    active_since: str | None = None  # ActiveEnterTimestamp, as systemd prints it
    main_started: str | None = None  # ExecMainStartTimestamp
    main_code: int | None = None  # ExecMainCode: how the last main process ended (CLD_*)
    main_status: int | None = None  # ExecMainStatus: its exit status, or the signal
    invocation_id: str | None = None
    unit_file_state: str | None = None  # enabled, disabled, static, ...
    environment: str | None = None
    environment_files: tuple[str, ...] = ()

    @property
    def exists(self) -> bool:
        """Does systemd know a unit file of this name?"""
        return self.load_state not in (None, "not-found")

    @property
    def running(self) -> bool:
        """Active with a main process."""
        return self.active_state == "active" and self.main_pid is not None

    @property
    def exit_code(self) -> int:
        """The last main process's end as a shell (and docker) says it: its exit status,
        or 128 + the signal that killed it (ExecMainCode 2 killed, 3 dumped core)."""
        status = self.main_status or 0
        return 128 + status if self.main_code in (CLD_KILLED, CLD_DUMPED) else status


def parse_show_blocks(text: str) -> list[dict[str, str]]:
    """The `Key=value` blocks of a `show` output, one per unit."""
    blocks: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in clean_lines(text):
        if not line.strip():
            if current:
                blocks.append(current)
            current = {}
            continue
        key, equals, value = line.partition("=")
        if equals and key.isidentifier():
            current[key] = value
    if current:
        blocks.append(current)
    return blocks


def _number(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() else None


def unit_status(props: dict[str, str], unit: str = "") -> UnitStatus:
    """One block of properties as a UnitStatus."""
    main = _number(props.get("MainPID"))
    exec_match = _EXEC.search(props.get("ExecStart", ""))
    files = props.get("EnvironmentFiles", "")
    return UnitStatus(
        unit=props.get("Id") or unit,
        load_state=props.get("LoadState") or None,
        active_state=props.get("ActiveState") or None,
        sub_state=props.get("SubState") or None,
        result=props.get("Result") or None,
        main_pid=main or None,
        restarts=_number(props.get("NRestarts")) or 0,
        exec_path=exec_match.group("path") if exec_match else None,
        exec_start=exec_match.group("argv") if exec_match else None,
        fragment_path=props.get("FragmentPath") or None,
        need_daemon_reload=props.get("NeedDaemonReload") == "yes",
        active_since=props.get("ActiveEnterTimestamp") or None,
        main_started=props.get("ExecMainStartTimestamp") or None,
        main_code=_number(props.get("ExecMainCode")),
        main_status=_number(props.get("ExecMainStatus")),
        invocation_id=props.get("InvocationID") or None,
        unit_file_state=props.get("UnitFileState") or None,
        environment=props.get("Environment") or None,
        environment_files=tuple(re.findall(r"(\S+) \(ignore_errors=\w+\)", files)),
    )


def exec_start_text(argv: list[str] | tuple[str, ...]) -> str:
    """How `systemctl show` prints the ExecStart of a unit that runs `argv`."""
    return " ".join(arg.replace("$", "$$") for arg in argv)
