"""Which lab holds which slot on this machine, and the machine directories labs share.

`/run/fleet-lab/<slot>/owner` names the lab directory that holds the slot. A claim is
live while that directory's state.json records the same slot (so a crashed lab keeps
its slot until its own `down`); a stale claim (the lab directory gone, or brought down)
may be taken over. `/run/fleet-lab/machine-dirs` lists the mount points labs created
on the machine (/models, /srv/fleet, /etc/litellm, /run/sshd): they are shared, so only
the last lab to go down removes them, and /run/fleet-lab itself, so that nothing is
left once every lab is down and no lab pulls a directory from under another's daemons.

The registry is guarded by an flock on /run/fleet-lab itself (re-checked after waiting,
as the last lab out removes the directory), so the lock leaves no file behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path

from . import slots
from .procs import LabError
from .state import LabState

OWNER = "owner"
MACHINE_DIRS = "machine-dirs"


@contextlib.contextmanager
def registry() -> Iterator[Path]:
    """Hold the machine-wide registry (/run/fleet-lab) for a short change."""
    run_root = slots.RUN_ROOT
    while True:
        run_root.mkdir(parents=True, exist_ok=True)
        fd = os.open(run_root, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                current = os.stat(run_root).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                current = False
            if current:  # not removed by the previous holder while this one waited
                yield run_root
                return
        finally:
            os.close(fd)


def owner_of(slot: int) -> Path | None:
    """The lab directory named by the slot's claim, if any."""
    try:
        return Path((slots.RUN_ROOT / str(slot) / OWNER).read_text().strip())
    except OSError:
        return None


def records(root: Path, slot: int) -> bool:
    """Does the lab at `root` record `slot` in its state (an unreadable state: yes)?"""
    try:
        return LabState.load(root / "state.json").slot == slot
    except (OSError, ValueError, TypeError):
        return True


def holder(slot: int, me: Path) -> Path | None:
    """The other lab holding `slot` by a live claim, or None (free, stale or mine)."""
    owner = owner_of(slot)
    if owner is None or owner == me or not records(owner, slot):
        return None
    return owner


def others(me: Path) -> list[LabState]:
    """The recorded states of every other lab that holds a slot."""
    found = []
    for slot in range(slots.SLOTS):
        owner = holder(slot, me)
        if owner is not None:
            with contextlib.suppress(OSError, ValueError, TypeError):
                found.append(LabState.load(owner / "state.json"))
    return found


def claim(state: LabState, wanted: int, explicit: bool) -> int:
    """Take `wanted` (explicit: only it; else the next free slot from it) for the lab of
    `state`, recording the slot in the state before anyone else can look."""
    me = state.root
    candidates = [wanted] if explicit else [(wanted + i) % slots.SLOTS for i in range(slots.SLOTS)]
    with registry() as run_root:
        for slot in candidates:
            if holder(slot, me) is not None:
                continue
            slot_dir = run_root / str(slot)
            slot_dir.mkdir(exist_ok=True)
            tmp = slot_dir / f"{OWNER}.tmp"
            tmp.write_text(f"{me}\n")
            tmp.rename(slot_dir / OWNER)
            state.slot = slot
            state.save()
            return slot
    if explicit:
        raise LabError(
            f"lab slot {wanted} is held by the lab in {holder(wanted, me)}: bring that one "
            f"down or choose another slot ({slots.ENV_VAR} or --slot)"
        )
    raise LabError(f"all {slots.SLOTS} lab slots are held by other labs on this machine")


def read_machine_dirs(run_root: Path) -> list[str]:
    """The shared mount points labs created, oldest first."""
    try:
        data = json.loads((run_root / MACHINE_DIRS).read_text())
    except (OSError, ValueError):
        return []
    return [str(d) for d in data] if isinstance(data, list) else []


def write_machine_dirs(run_root: Path, dirs: list[str]) -> None:
    """Replace the list of shared mount points (atomically)."""
    tmp = run_root / f"{MACHINE_DIRS}.tmp"
    tmp.write_text(json.dumps(list(dict.fromkeys(dirs)), indent=1))
    tmp.rename(run_root / MACHINE_DIRS)


def make_machine_dir(state: LabState, path: Path) -> None:
    """Create a machine-level directory the hosts need, recorded before it exists."""
    if path.exists():
        return
    with registry() as run_root:
        if path.exists():
            return
        state.add("dir", str(path))
        write_machine_dirs(run_root, [*read_machine_dirs(run_root), str(path)])
        path.mkdir(parents=True)


def legacy_lab_present(run_root: Path) -> bool:
    """Run dirs of the layout before slots (/run/fleet-lab/<host>): a lab of an older
    checkout may be running, so the shared directories stay."""
    with contextlib.suppress(OSError):
        return any(p.is_dir() and not p.name.isdigit() for p in run_root.iterdir())
    return False


def release(state: LabState) -> None:
    """Give up the state's slot; the last lab out removes the shared directories."""
    if state.slot is None and not state.created_dirs:
        return
    me = state.root
    with registry() as run_root:
        if state.slot is not None and owner_of(state.slot) == me:
            slot_dir = run_root / str(state.slot)
            (slot_dir / OWNER).unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                slot_dir.rmdir()
        shared = [*read_machine_dirs(run_root), *state.created_dirs]
        if others(me) or legacy_lab_present(run_root):
            if shared:
                write_machine_dirs(run_root, shared)  # handed over to whoever is last
            return
        for path in reversed(list(dict.fromkeys(shared))):
            with contextlib.suppress(OSError):
                Path(path).rmdir()
        (run_root / MACHINE_DIRS).unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            run_root.rmdir()
