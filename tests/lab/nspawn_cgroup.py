"""Each systemd host's own cgroup, so that no two hosts share their systemd's cgroups.

`systemd-nspawn --keep-unit` nests a container under the cgroup nspawn itself starts in:
the container's cgroups go to `<that>/payload`, nspawn's to `<that>/supervisor`. Started
from one cgroup (this machine's root: it runs no systemd), every host of every lab shared
one `/payload`, and so their pid 1s one `system.slice`. When one host's systemd removed
`system.slice/<unit>.service` after its unit ended while another host started a unit of
that name, the start failed with 219/CGROUP (`Failed to attach to cgroup
/system.slice/systemd-sysctl.service: No such file or directory`) and the host booted
degraded (seen with systemd-sysctl; very likely the earlier ssh.service and
systemd-tmpfiles-setup-dev failures too). Each nspawn now starts in
`/fleet-lab/<machine>` of every hierarchy it uses (the machine name carries the lab's
slot), and the host's `halt` or the lab's `down` removes that cgroup again.
"""

from __future__ import annotations

import contextlib
import shlex
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
PARENT = "fleet-lab"


def hierarchies() -> list[Path]:
    """Where nspawn keeps a container's cgroups: the unified hierarchy when it is the only
    one; on a hybrid machine the named `systemd` one and the unified one beside it."""
    if (ROOT / "cgroup.controllers").exists():
        return [ROOT]
    return [
        path for path in (ROOT / "systemd", ROOT / "unified") if (path / "cgroup.procs").exists()
    ]


def make(machine: str) -> list[Path]:
    """The host's own (empty) cgroup in each hierarchy."""
    made = [hierarchy / PARENT / machine for hierarchy in hierarchies()]
    for path in made:
        path.mkdir(parents=True, exist_ok=True)
    return made


def started_in(cgroups: list[Path], command: list[str]) -> list[str]:
    """`command`, run by a shell that first moves itself into `cgroups` and then becomes
    the command (same pid): nspawn starts in the host's own cgroup."""
    if not cgroups:
        return command
    moves = " && ".join(f"echo $$ > {shlex.quote(str(c / 'cgroup.procs'))}" for c in cgroups)
    return ["sh", "-c", f'{moves} && exec "$@"', "sh", *command]


def remove(machine: str) -> None:
    """The host's cgroups, deepest first (a cgroup still holding a process stays)."""
    for hierarchy in hierarchies():
        top = hierarchy / PARENT / machine
        if not top.is_dir():
            continue
        nested = sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts))
        for path in [*nested, top, top.parent]:  # the parent too, once no lab's host is in it
            with contextlib.suppress(OSError):
                path.rmdir()
