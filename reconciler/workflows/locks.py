"""Per-host apply locks and the apply journal, both files in the host's compose directory.

A lock is created atomically on the host: the holder line (who, which machine and boot,
pid, command, when) is written to a temporary file, then hard-linked to the lock's name,
which fails if a lock exists; a write that fails (a full disk) fails with the host's own
error and leaves no file behind. A second apply on a locked host fails naming the holder.
A lock whose holder ran on this machine and is gone (its pid is gone, or the machine
booted since: `gone_pid`) is stale: the next apply or loop cycle takes it over
(`acquire` returns the old holder line) and recovers from what is live. A lock held by
another machine or a live process is removed only by `fleet unlock HOST --force`. The
journal is a JSON-lines file of completed steps; an interrupted apply leaves it open, and
`fleet plan` says so.
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

from fleet import names, secrets
from fleet.errors import LockError
from fleet.spec.models import Host
from reconciler.host import HostSession

HOLDER = re.compile(r"^\S+@(?P<machine>\S+) pid (?P<pid>\d+) (?:boot (?P<boot>[\w-]+) )?")
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
HELD = 3  # the lock command's exit status when a lock exists


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
    boot = f"boot {_boot_id()} " if _boot_id() else ""
    user, machine = getpass.getuser(), socket.gethostname()
    return f"{user}@{machine} pid {os.getpid()} {boot}`{command}` since {now}"


def _boot_id() -> str:
    try:
        return BOOT_ID.read_text().strip()
    except OSError:
        return ""


def lock_command(directory: str, path: str, line: str) -> str:
    """Create `path` holding `line` at once, or exit HELD if it exists; any other failure
    exits non-zero with the host's own error, leaving no file behind."""
    temporary = shlex.quote(f"{path}.{os.getpid()}.tmp")
    path = shlex.quote(path)
    return (
        f"mkdir -p {shlex.quote(directory)} && "
        f"{{ printf '%s\\n' {shlex.quote(line)} > {temporary} || "
        f"{{ rm -f {temporary}; exit 1; }}; }} && "
        f"{{ ln {temporary} {path} 2>/dev/null; rc=$?; rm -f {temporary}; "
        f"[ $rc = 0 ] || {{ [ -e {path} ] && exit {HELD}; "
        f"echo 'cannot link the lock into place' >&2; exit 1; }}; }}"
    )


def acquire(conn: HostSession, host: Host) -> str | None:
    """Take the host's lock; the holder line of a stale lock it took over (None if the
    host was free), or LockError naming who holds it (or why it cannot be created)."""
    result = conn.run(lock_command(host.apply_state_dir, lock_path(host), holder()))
    if result.exit_status == 0:
        return None
    if result.exit_status != HELD:
        reason = (result.stderr.strip() or result.stdout.strip() or "no output").splitlines()
        raise LockError(
            f"cannot create the lock {lock_path(host)} on {host.name}: {reason[-1]}",
            where=host.name,
        )
    held = conn.read_file(lock_path(host)) or ""
    if gone_pid(held) is not None:
        return _take_over(conn, host, held)
    raise LockError(
        f"{host.name} is locked by {held.strip() or 'unknown holder'}; if that apply is "
        f"gone, run `fleet unlock {host.name} --force`",
        where=host.name,
    )


def _take_over(conn: HostSession, host: Host, held: str) -> str:
    """Replace a stale lock by ours (if it still says what we read); the old holder."""
    path = shlex.quote(lock_path(host))
    conn.run(f'[ "$(cat {path})" = {shlex.quote(held.rstrip(chr(10)))} ] && rm -f {path}')
    result = conn.run(lock_command(host.apply_state_dir, lock_path(host), holder()))
    if result.exit_status != 0:
        now = conn.read_file(lock_path(host)) or "unknown holder"
        raise LockError(f"{host.name} is locked by {now.strip()}", where=host.name)
    return held.strip()


def release(conn: HostSession, host: Host) -> None:
    """Drop the host's lock."""
    conn.run(f"rm -f {shlex.quote(lock_path(host))}")


def record(conn: HostSession, host: Host, step: str, **details: str) -> None:
    """Append one completed step to the host's journal (known secret shapes redacted: a
    cause may quote an engine's log or argv)."""
    redacted = {key: secrets.redact(value) for key, value in details.items()}
    line = json.dumps(
        {"at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), "step": step, **redacted},
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
    """The pid of a lock holder that ran on this machine and is gone (its pid is gone, or
    the machine booted since); None when it ran elsewhere, still runs, or the holder line
    is not fleet's."""
    match = HOLDER.match(held.strip())
    if match is None or match["machine"] != socket.gethostname():
        return None
    pid = int(match["pid"])
    if match["boot"] and _boot_id() and match["boot"] != _boot_id():
        return pid
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
