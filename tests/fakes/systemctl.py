"""`systemctl` and `journalctl` as fleet's systemd adapter runs them, on a fake host.

The handlers `FakeHost` (tests.fakes.host) adds to its table: `daemon-reload` (systemd
loads the unit files there are now), `enable` + `restart` of one unit, `disable --now`,
`reset-failed`, `restart` / `stop` / `start` by name, the current run's output by its
invocation, a unit's MainPID and that process's /proc cmdline, the listing of fleet's
unit files, the `rm -f` of a removed copy's unit and its `.prev`, and of a secrets file
no unit of its seat is left to read. The state they change is `tests.fakes.units`'.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from reconciler.host import CommandResult
from tests.fakes.units import OK, UNIT_DIR, start, unit

if TYPE_CHECKING:
    from tests.fakes.host import FakeHost


def _reload(host: FakeHost, words: list[str], _: str | None) -> CommandResult:
    if words:
        host.directories.add(words[0])
    host.systemd.reload(host.files)
    return OK


def _enable_restart(host: FakeHost, words: list[str], _: str | None) -> CommandResult:
    name = unit(words[0])
    if name not in host.systemd.loaded:
        return CommandResult(1, f"Failed to enable unit: Unit file {name} does not exist.", "")
    result = start(host, name)
    if result.exit_status == 0:
        host.systemd.units[name].enabled = True
    return result


def _disable_now(host: FakeHost, words: list[str], _: str | None) -> CommandResult:
    name = unit(words[0])
    ran = host.systemd.units.get(name)
    if ran is not None:
        ran.state, ran.enabled = "inactive", False
        host.removed.append(name)
    return OK


def _verb(host: FakeHost, words: list[str], _: str | None) -> CommandResult:
    verb, name = words[0], unit(words[1])
    ran = host.systemd.units.get(name)
    host.journal.append((f"systemctl-{verb}", name))
    if verb == "stop":
        if ran is not None:
            ran.state = "inactive"
        return OK
    if verb == "reset-failed":
        if ran is not None and ran.state == "failed":
            del host.systemd.units[name]
        return OK
    return start(host, name)


def _run_log(host: FakeHost, words: list[str], _: str | None) -> CommandResult:
    ran = host.systemd.units.get(unit(words[0]))
    lines = ran.log[-int(words[1]) :] if ran else []
    return CommandResult(0, "".join(f"{line}\n" for line in lines), "")


def _main_pid(host: FakeHost, words: list[str], _: str | None) -> CommandResult:
    ran = host.systemd.units.get(unit(words[0]))
    return CommandResult(0, f"{ran.pid if ran and ran.running else 0}\n", "")


def _cmdline(host: FakeHost, words: list[str], _: str | None) -> CommandResult:
    for ran in host.systemd.units.values():
        if ran.running and str(ran.pid) == words[0]:
            return CommandResult(0, "".join(f"{a}\0" for a in ran.argv), "")
    return CommandResult(1, "", f"cat: /proc/{words[0]}/cmdline: No such file or directory")


def _list_units(host: FakeHost, _: list[str], __: str | None) -> CommandResult:
    names = sorted(
        p.removeprefix(UNIT_DIR + "/")
        for p in host.files
        if re.fullmatch(re.escape(UNIT_DIR) + r"/fleet-[^/]*\.service", p)
    )
    return CommandResult(0, "".join(f"{n}\0" for n in names), "")


def _rm_files(host: FakeHost, words: list[str], _: str | None) -> CommandResult:
    for path in words:
        host.files.pop(path, None)
    return OK


def _rm_unused(host: FakeHost, words: list[str], _: str | None) -> CommandResult:
    """`[ -e UNIT ] || [ -e UNIT-b ] || rm -f ENV`, once or twice."""
    for first, second, env in zip(words[::3], words[1::3], words[2::3], strict=True):
        if env and first not in host.files and second not in host.files:
            host.files.pop(env, None)
    return OK


_UNUSED = r"\[ -e WORD \] \|\| \[ -e WORD \] \|\| rm -f WORD"


SYSTEMD_COMMANDS = [
    (r"mkdir -p WORD && systemctl daemon-reload", _reload),
    (r"systemctl daemon-reload", _reload),
    (r"systemctl enable WORD 2>&1 && systemctl restart WORD", _enable_restart),
    (r"systemctl disable --now WORD 2>&1", _disable_now),
    (r"systemctl (reset-failed) WORD 2>/dev/null", _verb),
    (r"systemctl (restart|stop|start) WORD", _verb),
    (
        r"journalctl -o cat --no-pager _SYSTEMD_INVOCATION_ID="
        r"\$\(systemctl show -p InvocationID --value WORD\) \| tail -n (\d+)",
        _run_log,
    ),
    (r"systemctl show -p MainPID --value WORD", _main_pid),
    (r"cat /proc/(\d+)/cmdline", _cmdline),
    (
        r"cd /etc/systemd/system && for u in fleet-\*\.service; do "
        r"\[ -f \"\$u\" \] && printf '%s\\0' \"\$u\"; done; true",
        _list_units,
    ),
    (r"rm -f WORD WORD", _rm_files),
    (rf"{_UNUSED}(?:; {_UNUSED})?", _rm_unused),
]
