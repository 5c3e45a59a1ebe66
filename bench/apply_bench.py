"""Benchmark apply across hosts: wall time of the seat wave against the sum and the max of
the per-host seat times.

Brings up the lab (tower, rig, gateway), writes a fleet repository with seats on both GPU
hosts whose stand-in engines take `--load` seconds to load (FLEET_LAB_LOAD_SECONDS, as a
real engine takes minutes), runs `fleet apply --auto-approve` as a user would, and reads
the per-host times off apply's own progress lines (`[  t s] host: ...`). Hosts apply
concurrently, so the seat wave should take about the max, not the sum.

usage: .venv/bin/python -m bench.apply_bench [--load 8] [--runs 2]
Takes the lab over (brought down at the end). Figures, not assertions.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from tests.integration.helpers import make_repo
from tests.lab.lab import Lab

SEATS = ("coder", "embed", "llama8b")  # two on tower, one on rig
STEP = re.compile(r"^\[\s*([\d.]+)s\] (\w[\w-]*): (.*)$")


def write_load(desired: Path, seconds: float) -> None:
    """Give every seat's stand-in engine a load time."""
    for seat in (desired / "seats").glob("*.yaml"):
        text = seat.read_text()
        seat.write_text(f"{text.rstrip()}\nenv: {{FLEET_LAB_LOAD_SECONDS: '{seconds:g}'}}\n")


def seat_times(output: str) -> tuple[float, dict[str, float]]:
    """The seat wave's wall time (first upload to last seat healthy, any host) and, per
    host, from its compose upload to its last seat healthy, in seconds."""
    marks: dict[str, list[float]] = defaultdict(list)
    for line in output.splitlines():
        match = STEP.match(line)
        wanted = match and match.group(2) != "gateway"
        if match and wanted and ("upload" in match.group(3) or "healthy" in match.group(3)):
            marks[match.group(2)].append(float(match.group(1)))
    every = [t for times in marks.values() for t in times]
    hosts = {host: max(times) - min(times) for host, times in marks.items() if len(times) > 1}
    return max(every) - min(every), hosts


def one_run(lab: Lab, scratch: Path, load: float) -> tuple[float, float, dict[str, float]]:
    lab.reset()
    repo = make_repo(scratch, lab, seats=SEATS)
    write_load(repo.desired, load)
    repo.commit("engines that take a while to load")
    started = time.perf_counter()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "reconciler",
            "apply",
            "--auto-approve",
            "--timeout",
            "300",
            "-d",
            str(repo.desired),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, **lab.env()},
        check=False,
    )
    wall = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(f"apply failed:\n{result.stdout}\n{result.stderr}")
    wave, hosts = seat_times(result.stdout)
    return wall, wave, hosts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--load", type=float, default=8.0)
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    lab = Lab()
    with lab.locked():
        lab.up()
        try:
            rows = []
            for run in range(args.runs):
                with tempfile.TemporaryDirectory() as scratch:
                    rows.append(one_run(lab, Path(scratch) / f"run{run}", args.load))
        finally:
            lab.down()
    print(f"apply of {len(SEATS)} seats on 2 GPU hosts, engines loading {args.load:g} s each")
    print(
        f"{'run':>4} {'apply':>7} {'seat wave':>10} {'per host':>26} {'sum':>7} {'max':>7} "
        f"{'wave/max':>9} {'wave/sum':>9}"
    )
    for n, (wall, wave, hosts) in enumerate(rows, 1):
        per_host = ", ".join(f"{h}={s:.1f}s" for h, s in sorted(hosts.items()))
        total, longest = sum(hosts.values()), max(hosts.values())
        print(
            f"{n:>4} {wall:6.1f}s {wave:9.1f}s {per_host:>26} {total:6.1f}s {longest:6.1f}s "
            f"{wave / longest:8.2f}x {wave / total:8.2f}x"
        )
    print(f"median seat wave: {statistics.median(w for _, w, _ in rows):.1f}s")


if __name__ == "__main__":
    main()
