"""Per-host apply locks and the apply journal, both files in the host's compose directory.

A lock is created atomically on the host (the shell's noclobber: `set -C`), holding who
took it, with which command and when; a second apply on a locked host fails with that
information, and `fleet unlock HOST --force` removes it; a lock whose holder ran on this
machine and whose pid is gone is called stale instead (`gone_pid`). The journal is a
JSON-lines file of completed steps; an interrupted apply leaves it open, and `fleet plan`
says so.
"""

from __future__ import annotations

import getpass
import json
import os
import re
import shlex
import socket
import sys
from datetime import UTC, datetime
from pathlib import Path

from fleet import names
from fleet.errors import LockError
from fleet.observed.findings import stale_lock
from fleet.spec.models import Host
from reconciler.host import HostSession

HOLDER = re.compile(r"^\S+@(?P<machine>\S+) pid (?P<pid>\d+) ")


def lock_path(host: Host) -> str:
    """Where a host's lock lives."""
    return names.lock_path(host.apply_state_dir)


def journal_path(host: Host) -> str:
    """Where a host's apply journal lives."""
    return names.journal_path(host.apply_state_dir)


def holder() -> str:
    """One line saying who is applying: user@machine, pid, command, time."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    command = " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(sys.argv))
    return f"{getpass.getuser()}@{socket.gethostname()} pid {os.getpid()} `{command}` since {now}"


def acquire(conn: HostSession, host: Host) -> None:
    """Take the host's lock, or LockError naming who holds it."""
    path = shlex.quote(lock_path(host))
    directory = shlex.quote(host.apply_state_dir)
    result = conn.run(
        f"mkdir -p {directory} && (set -C; printf '%s\\n' "
        f"{shlex.quote(holder())} > {path}) 2>/dev/null"
    )
    if result.exit_status != 0:
        held = conn.read_file(lock_path(host)) or "unknown holder"
        if (pid := gone_pid(held)) is not None:
            raise LockError(stale_lock(host.name, pid), where=host.name)
        raise LockError(
            f"{host.name} is locked by {held.strip()}; if that apply is gone, "
            f"run `fleet unlock {host.name} --force`",
            where=host.name,
        )


def release(conn: HostSession, host: Host) -> None:
    """Drop the host's lock."""
    conn.run(f"rm -f {shlex.quote(lock_path(host))}")


def record(conn: HostSession, host: Host, step: str, **details: str) -> None:
    """Append one completed step to the host's journal."""
    line = json.dumps(
        {"at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "step": step, **details},
        sort_keys=True,
    )
    conn.check(f"printf '%s\\n' {shlex.quote(line)} >> {shlex.quote(journal_path(host))}")


def break_lock(conn: HostSession, host: Host, *, force: bool) -> str | None:
    """Remove a lock left by an apply that is gone: who held it, or None if none was held.

    Without `force` a held lock is a LockError naming its holder (nothing is removed).
    """
    held = conn.read_file(lock_path(host))
    if held is None:
        return None
    if not force:
        raise LockError(f"{host.name} is locked by {held.strip()}; add --force to remove it")
    release(conn, host)
    return held.strip()


def gone_pid(held: str) -> int | None:
    """The pid of a lock holder that ran on this machine and is gone; None when it ran
    elsewhere, still runs, or the holder line is not fleet's."""
    match = HOLDER.match(held.strip())
    if match is None or match["machine"] != socket.gethostname():
        return None
    pid = int(match["pid"])
    return None if pid == os.getpid() or _alive(pid) else pid


def _alive(pid: int) -> bool:
    """A zombie passes `kill -0`, so /proc's state decides where there is one."""
    stat = Path(f"/proc/{pid}/stat")
    if Path("/proc/self").exists():
        try:
            return stat.read_text().rpartition(")")[2].split()[0] not in ("Z", "X")
        except (OSError, IndexError):
            return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
