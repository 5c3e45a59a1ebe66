"""`python -m tests.lab up|down|status [--gpu-hosts N]`: the lab from the command line."""

from __future__ import annotations

import argparse
import sys
import time

from .lab import Lab
from .procs import LabError


def main(argv: list[str] | None = None) -> int:
    """Bring the lab up or down, or show its status."""
    parser = argparse.ArgumentParser(prog="python -m tests.lab")
    parser.add_argument("action", choices=("up", "down", "status"))
    parser.add_argument(
        "--gpu-hosts",
        type=int,
        default=None,
        help="bench lab: N generic GPU hosts bench-1.. plus the gateway",
    )
    args = parser.parse_args(argv)
    lab = Lab(gpu_hosts=args.gpu_hosts)
    started = time.monotonic()
    try:
        with lab.locked(timeout=60):
            if args.action == "up":
                lab.up()
                print(
                    f"lab up in {time.monotonic() - started:.1f}s: "
                    f"{', '.join(f'{h.name}={h.address}' for h in lab.hosts.values())}"
                )
                print(f"  source {lab.env_file}   # FLEET_SSH_CONFIG, LITELLM_MASTER_KEY")
                print(f"  gateway {lab.gateway_url}")
            elif args.action == "down":
                lab.down()
                print(f"lab down in {time.monotonic() - started:.1f}s")
            else:
                for name, row in lab.status().items():
                    print(
                        f"{name:10} "
                        + "  ".join(f"{k}={'up' if v else 'DOWN'}" for k, v in row.items())
                    )
    except LabError as err:
        print(f"lab: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
