"""`python -m tests.lab up|down|status|rewrite-desired DIR|prepare systemd|engines [--gpu-hosts N]
[--slot N] [--systemd]`.

The lab from the command line. `--slot` (or FLEET_LAB_SLOT) is the slot `up` takes;
without it `up` takes the lab directory's own slot (or the next free one). `up --systemd`
also boots the lab's systemd hosts (rtx3090, apu, rtx5070: tests/lab/nspawn.py), on which
the llama.cpp example fleet runs. `down` and `status` act on the lab where its state
records it (its systemd hosts too). `rewrite-desired DIR` points a copy of an example's
desired/ at the lab (tests/lab/examples.py): desired/'s nominal addresses become the
lab's; the llama.cpp example's hosts become the lab's systemd hosts. `prepare systemd` and
`prepare engines` build what the lab caches (tests/lab/prepare.py; install.sh runs them).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from . import examples, nspawn, prepare
from .lab import Lab
from .procs import LabError
from .slots import SLOTS, check_slot


def slot_arg(value: str) -> int:
    """--slot's value."""
    try:
        return check_slot(value)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def parse(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(prog="python -m tests.lab")
    parser.add_argument("action", choices=("up", "down", "status", "rewrite-desired", "prepare"))
    parser.add_argument(
        "directory", nargs="?", help="rewrite-desired: the tree; prepare: systemd or engines"
    )
    parser.add_argument(
        "--gpu-hosts",
        type=int,
        default=None,
        help="bench lab: N generic GPU hosts bench-1.. plus the gateway",
    )
    parser.add_argument(
        "--slot",
        type=slot_arg,
        default=None,
        help=f"the lab's slot 0..{SLOTS - 1} (addresses, bridges, pools, run dirs)",
    )
    parser.add_argument(
        "--systemd",
        action="store_true",
        help="up: also boot the systemd hosts rtx3090, apu, rtx5070 (the llama.cpp example's)",
    )
    args = parser.parse_args(argv)
    if args.action == "prepare":
        if args.directory not in ("systemd", "engines"):
            parser.error("prepare takes systemd or engines")
        return args
    if (args.action == "rewrite-desired") != (args.directory is not None):
        parser.error("a directory goes with rewrite-desired, and only with it")
    if args.directory is not None:
        args.directory = Path(args.directory)
    if args.systemd and args.action != "up":
        parser.error("--systemd goes with up (down and status find the systemd hosts)")
    return args


def where(lab: Lab) -> str:
    """One line: the slot and each host's address."""
    hosts = ", ".join(f"{h.name}={h.address}" for h in lab.hosts.values())
    return f"slot {lab.slot.index}: {hosts}"


def main(argv: list[str] | None = None) -> int:
    """Bring the lab up or down, show its status, or point a desired/ copy at it."""
    args = parse(argv)
    started = time.monotonic()
    try:
        if args.action == "prepare":
            for line in prepare.prepare(args.directory):
                print(f"lab prepare: {line}")
            return 0
        lab = Lab(gpu_hosts=args.gpu_hosts, slot=args.slot)
        if args.action in ("status", "rewrite-desired"):
            nspawn.running(lab)  # the systemd hosts an `up --systemd` booted
        if args.action == "rewrite-desired":
            changed = examples.point_at_lab(lab, args.directory)
            print(f"{len(changed)} file(s) in {args.directory} now name the lab ({where(lab)})")
            return 0
        with lab.locked(timeout=60):
            if args.action == "up":
                lab.up()
                if args.systemd:
                    nspawn.boot(lab)
                print(f"lab up in {time.monotonic() - started:.1f}s, {where(lab)}")
                print(f"  source {lab.env_file}   # FLEET_SSH_CONFIG, LITELLM_MASTER_KEY")
                if lab.gateway_host is not None:
                    print(f"  gateway {lab.gateway_url}")
            elif args.action == "down":
                lab.down()
                print(f"lab down in {time.monotonic() - started:.1f}s")
            else:
                print(where(lab))
                for name, row in lab.status().items():
                    print(
                        f"{name:10} "
                        + "  ".join(f"{k}={'up' if v else 'DOWN'}" for k, v in row.items())
                    )
    except (LabError, ValueError) as err:
        print(f"lab: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
