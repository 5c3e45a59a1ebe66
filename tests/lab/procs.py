"""Starting, recognising and stopping the lab's own processes.

Every process the lab starts is recorded with its pid and kernel start time, so that
`down` (also after a crash) stops exactly those and never a process that merely got a
recycled pid. Each host's daemons run in a private mount namespace created with
`unshare`; any process still inside such a namespace at `down` is the lab's too.
This VM reaps orphans late: a zombie is treated as dead (see LAB-NOTES).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO

from tests.waiting import poll

# Binds a host's folders over the machine's /models, /srv/fleet, /etc/litellm and /etc/nginx inside
# a private mount namespace, then runs the daemon there. The host's own root .bashrc
# replaces this machine's (whose pyenv set-up would slow every SSH command).
HOSTNS_SCRIPT = """set -e
root="$1"; shift
mount --bind "$root/models" /models
mount --bind "$root/srv-fleet" /srv/fleet
if [ -d "$root/etc-litellm" ]; then mount --bind "$root/etc-litellm" /etc/litellm; fi
if [ -d "$root/etc-nginx" ]; then mount --bind "$root/etc-nginx" /etc/nginx; fi
if [ -f /root/.bashrc ]; then mount --bind "$root/bashrc" /root/.bashrc; fi
exec "$@"
"""
MOUNT_POINTS = (Path("/models"), Path("/srv/fleet"), Path("/etc/litellm"), Path("/etc/nginx"))


@dataclass(frozen=True)
class ProcRecord:
    """A process the lab started: enough to find it again, and only it."""

    role: str
    host: str
    pid: int
    start: int

    def to_json(self) -> dict[str, object]:
        """For the state file."""
        return asdict(self)


def read_stat(pid: int) -> tuple[str, list[str]] | None:
    """/proc/<pid>/stat: the command name, and the fields after it; None if gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    end = text.rindex(")")  # the name may hold spaces and parentheses itself
    return text[text.index("(") + 1 : end], text[end + 2 :].split()


def stat_fields(pid: int) -> list[str] | None:
    """/proc/<pid>/stat split after the command name; None if gone."""
    stat = read_stat(pid)
    return stat[1] if stat else None


def start_time(pid: int) -> int | None:
    """Kernel start time of `pid` (clock ticks since boot)."""
    fields = stat_fields(pid)
    return int(fields[19]) if fields else None


def alive(pid: int) -> bool:
    """Running (a zombie counts as dead)."""
    fields = stat_fields(pid)
    return bool(fields) and fields[0] != "Z"


def is_ours(record: ProcRecord) -> bool:
    """Is the recorded process still the same one and still running?"""
    return alive(record.pid) and start_time(record.pid) == record.start


def in_host_namespace(root: Path, command: list[str]) -> list[str]:
    """`command`, run in a new private mount namespace with the host's folders bound."""
    return [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        HOSTNS_SCRIPT,
        "hostns",
        str(root),
        *command,
    ]


def spawn(
    role: str, host: str, command: list[str], log: Path, env: dict[str, str]
) -> tuple[ProcRecord, subprocess.Popen[bytes]]:
    """Start a detached daemon (own session) logging to `log`."""
    with log.open("ab") as out:
        proc = subprocess.Popen(
            command,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    started = poll(lambda: start_time(proc.pid), 2, interval=0.01)
    return ProcRecord(role, host, proc.pid, started or 0), proc


def mount_namespace(pid: int) -> str | None:
    """The mount-namespace id of a process (e.g. 'mnt:[4026532291]')."""
    try:
        return os.readlink(f"/proc/{pid}/ns/mnt")
    except OSError:
        return None


def foreign_namespaces() -> set[str]:
    """Mount namespaces the lab must never empty: its own and its ancestors'."""
    found = set()
    pid: int | None = os.getpid()
    while pid:
        ns = mount_namespace(pid)
        if ns:
            found.add(ns)
        fields = stat_fields(pid)
        pid = int(fields[1]) if fields else None
    return found


def pids_in_namespaces(namespaces: set[str], host_roots: set[Path]) -> list[int]:
    """Live processes inside any of the given mount namespaces (never the lab's own) that
    bind /models from one of `host_roots`.

    A namespace's id is an inode number the kernel hands out again once the namespace is
    gone, often at once: while one lab goes down, a container another lab is starting can
    get the id of a namespace the first just emptied. The /models bind mount that
    `in_host_namespace` makes tells the lab's own namespaces from such a newcomer.
    """
    namespaces = namespaces - foreign_namespaces()
    if not namespaces:
        return []
    models = {str((root / "models").resolve()) for root in host_roots}
    found = []
    for entry in Path("/proc").iterdir():
        pid = int(entry.name) if entry.name.isdigit() else 0
        ours = pid and mount_namespace(pid) in namespaces and binds_models(pid, models)
        if ours and alive(pid):
            found.append(pid)
    return found


def binds_models(pid: int, models_dirs: set[str]) -> bool:
    """Does the process see one of these folders bound at /models (its mountinfo)?"""
    try:
        lines = Path(f"/proc/{pid}/mountinfo").read_text().splitlines()
    except OSError:
        return False
    for line in lines:
        fields = line.split()
        # id parent major:minor root mount-point ...; `root` is the bound folder's path
        # inside its file system, so the full path ends with it
        if len(fields) > 4 and fields[4] == "/models":
            source = fields[3].replace("\\040", " ")
            return any(d == source or d.endswith(source) for d in models_dirs if source != "/")
    return False


def send(pid: int, sig: int) -> None:
    """Signal a process, ignoring one that is already gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def wait_gone(pids: list[int], timeout: float) -> list[int]:
    """Wait until the processes died; returns those still alive."""
    left = [p for p in pids if alive(p)]

    def gone() -> bool:
        left[:] = [p for p in left if alive(p)]
        return not left

    poll(gone, timeout, interval=0.05)
    return left


def stop(pids: list[int], timeout: float = 10.0) -> None:
    """SIGTERM, then SIGKILL what is left after `timeout`."""
    for pid in pids:
        send(pid, signal.SIGTERM)
    for pid in wait_gone(pids, timeout):
        send(pid, signal.SIGKILL)
    wait_gone(pids, 5.0)


def kill(pids: list[int]) -> None:
    """SIGKILL the processes and wait (5 s at most) until they are gone."""
    for pid in pids:
        send(pid, signal.SIGKILL)
    wait_gone(pids, 5.0)


def describe(pid: int) -> str:
    """'pid 123 (containerd-shim, state D)', for an error that names a process."""
    stat = read_stat(pid)
    if stat is None:
        return f"pid {pid} (gone)"
    name, fields = stat
    return f"pid {pid} ({name}, state {fields[0]})"


def run(
    command: list[str],
    env: dict[str, str] | None = None,
    timeout: float = 120,
    check: bool = True,
    input_text: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run a short command, capturing its output."""
    result = subprocess.run(
        command,
        env=env,
        timeout=timeout,
        capture_output=True,
        text=True,
        input=input_text,
        check=False,
    )
    if check and result.returncode != 0:
        raise LabError(
            f"{' '.join(command[:4])}... failed ({result.returncode}): "
            f"{(result.stderr or result.stdout).strip()[-800:]}"
        )
    return result


class LabError(Exception):
    """The lab could not be brought up or down."""


def hold_flock(handle: IO[str], timeout: float, what: str) -> None:
    """Take an exclusive flock on `handle`, trying each second; LabError after `timeout`."""

    def taken() -> bool:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    if not poll(taken, timeout, interval=1):
        raise LabError(f"{what} busy for {timeout:.0f}s")
