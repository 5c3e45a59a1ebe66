"""Boot the lab's systemd hosts many times in a row, beside another lab on busy cores.

    .venv/bin/python -m tests.lab.nspawn_soak [--boots 20] [--busy 2] [--late-link S]

Brings up the lab of FLEET_LAB_DIR (tower, rig, gateway, as a test session's) and a
second, one-host lab beside it (`<lab dir>-second`), keeps `--busy` processes spinning on
the cores, then boots the three systemd hosts (tests/lab/nspawn.py) and powers them off
`--boots` times (`--late-link S`: this machine brings its end of each host's veth up S
seconds late, as a busy machine may, so host0 gets its address late). Per boot it prints
the seconds until every host's sshd answered, each host's `systemctl is-system-running
--wait` (over SSH: `running` when no unit failed), any host still running after the
power-off (`LEFT-RUNNING`), the mounts of the rootfs or of the hosts' folders left on the
machine, and whether the shared rootfs (every host's lower layer) changed; a boot that
failed prints the lab's error (the failing unit and its status lines). Last, a summary
line; exit 1 if any boot failed. Both labs go down at the end, the busy processes are
stopped.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from . import nspawn, procs
from .lab import Lab
from .nspawn_layer import ensure_rootfs
from .procs import LabError
from .spec import RTX_3090, HostSpec, make_gpus


def tree_digest(root: Path) -> int:
    """A fingerprint of a tree's entries: path, mode, size, mtime and ctime of each."""
    entries = []
    for folder, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            st = os.lstat(os.path.join(folder, name))
            entries.append((folder, name, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    return hash(tuple(sorted(entries)))


def mounts_under(*roots: Path) -> list[str]:
    """Mount points on this machine inside any of `roots`."""
    prefixes = [str(r.resolve()) for r in roots]
    points = [ln.split()[4] for ln in Path("/proc/self/mountinfo").read_text().splitlines()]
    return [p for p in points if any(p == x or p.startswith(x + "/") for x in prefixes)]


def one_boot(lab: Lab) -> tuple[float, float, str]:
    """Boot, check and power off the systemd hosts: (seconds to sshd, to power-off, what
    the hosts said); LabError when one did not come up."""
    started = time.monotonic()
    hosts = nspawn.boot(lab)
    up = time.monotonic() - started
    inits = [r for r in lab.state.procs if r.role == nspawn.INIT_ROLE]
    try:
        wait = "systemctl is-system-running --wait"
        states = [f"{h.name}={lab.run(h.name, wait, timeout=180).stdout.strip()}" for h in hosts]
    finally:
        halted = time.monotonic()
        nspawn.halt(lab, hosts)
    down = time.monotonic() - halted
    states += [f"{r.host}=LEFT-RUNNING" for r in inits if procs.is_ours(r)]
    return up, down, " ".join(states)


def soak(lab: Lab, boots: int) -> bool:
    """`boots` boots in a row; True if every one came up with no unit failed."""
    rootfs = ensure_rootfs()
    before = tree_digest(rootfs)
    ups, downs, good = [], [], 0
    for n in range(1, boots + 1):
        try:
            up, down, states = one_boot(lab)
        except LabError as err:
            print(f"boot {n:2}/{boots}: FAILED: {err}", flush=True)
            continue
        left = mounts_under(rootfs, lab.root / "hosts")
        same = tree_digest(rootfs) == before
        ok = all(s.endswith("=running") for s in states.split()) and not left and same
        good += ok
        ups.append(up)
        downs.append(down)
        print(
            f"boot {n:2}/{boots}: sshd of every host after {up:5.1f} s; {states}; "
            f"power-off {down:4.1f} s; mounts left {len(left)}; "
            f"rootfs {'unchanged' if same else 'CHANGED'}{'' if ok else '  <- FAILED'}",
            flush=True,
        )
    if ups:
        print(
            f"{good}/{boots} boots came up clean; sshd after {min(ups):.1f}..{max(ups):.1f} s "
            f"(median {statistics.median(ups):.1f}); power-off {min(downs):.1f}.."
            f"{max(downs):.1f} s"
        )
    return good == boots


def second_lab(root: Path) -> Lab:
    """A one-host lab (sshd and a Docker engine, no images) beside the first."""
    spec = HostSpec("tower", "127.0.0.11", 1, make_gpus("tower", RTX_3090, 24576, 1))
    return Lab(root=root, hosts=(spec,))


def main(argv: list[str] | None = None) -> int:
    """Bring both labs up, spin the cores, boot the systemd hosts `--boots` times."""
    parser = argparse.ArgumentParser(prog="python -m tests.lab.nspawn_soak")
    parser.add_argument("--boots", type=int, default=20)
    parser.add_argument("--busy", type=int, default=2, help="processes spinning meanwhile")
    parser.add_argument(
        "--late-link",
        type=float,
        default=0.0,
        help="seconds this machine waits before it brings its end of each veth up",
    )
    args = parser.parse_args(argv)
    nspawn.LATE_LINK = args.late_link
    lab = Lab()
    other = second_lab(lab.root.with_name(lab.root.name + "-second"))
    spinners: list[subprocess.Popen[bytes]] = []
    try:
        with lab.locked(timeout=60), other.locked(timeout=60):
            lab.up()
            other.up()
            print(f"labs up: slot {lab.slot.index} and slot {other.slot.index}", flush=True)
            spin = [sys.executable, "-c", "while True: pass"]
            spinners = [subprocess.Popen(spin) for _ in range(args.busy)]
            return 0 if soak(lab, args.boots) else 1
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
        other.down()
        lab.down()


if __name__ == "__main__":
    sys.exit(main())
