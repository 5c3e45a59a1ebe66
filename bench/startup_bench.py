"""Benchmark the start-up of the offline commands against a bare `import pydantic, typer`.

Each command runs as a user runs it (a fresh interpreter, `python -m reconciler ...`), R
times, interleaved with the reference so that a noisy machine slows both alike. Prints
the median wall time (min-max) of each and its ratio to the reference's median, and to
a floor: what any command that validates input with a pydantic model pays before its
own work (one strict frozen model defined and used, typer and PyYAML imported).

fleet's own modules are byte-compiled first, as `pip install` leaves them: a checkout run
where PYTHONDONTWRITEBYTECODE is set (as on this project's CI machines) would otherwise
compile every module from source on each run, and time that instead (~1.5x the floor).

usage: .venv/bin/python -m bench.startup_bench [--runs 15]
Figures, not assertions; the target is each command within 1.5x of the reference.
"""

from __future__ import annotations

import argparse
import compileall
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "tests" / "corpus" / "model-configs" / "llama-3.1-8b-instruct_dense.config.json"
REFERENCE = ("import pydantic, typer", [sys.executable, "-c", "import pydantic, typer"])
FLOOR_CODE = """import typer, yaml
from pydantic import BaseModel, ConfigDict
class Seat(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    context: int
Seat.model_validate(yaml.safe_load("{name: coder, context: 8192}"))
"""
FLOOR = ("floor: one pydantic model", [sys.executable, "-c", FLOOR_CODE])
COMMANDS = {
    "fleet version": ["version"],
    "fleet validate": ["validate", "--desired", str(REPO / "desired")],
    "fleet schema": ["schema"],
    "fleet explain model": ["explain", "model", str(CONFIG)],
}


def timed(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, cwd=REPO, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    for package in ("fleet", "reconciler"):
        compileall.compile_dir(REPO / package, quiet=1)
    samples: dict[str, list[float]] = {REFERENCE[0]: [], FLOOR[0]: []}
    samples |= {name: [] for name in COMMANDS}
    for _ in range(runs):
        for name, argv in (REFERENCE, FLOOR):
            samples[name].append(timed(argv))
        for name, args in COMMANDS.items():
            samples[name].append(timed([sys.executable, "-m", "reconciler", *args]))
    reference = statistics.median(samples[REFERENCE[0]])
    floor = statistics.median(samples[FLOOR[0]])
    print(f"{'what':<26} {'median s':>9} {'min-max s':>13} {'x reference':>12} {'x floor':>8}")
    for name, values in samples.items():
        median = statistics.median(values)
        spread = f"{min(values):.3f}-{max(values):.3f}"
        print(
            f"{name:<26} {median:9.3f} {spread:>13} {median / reference:11.2f}x"
            f" {median / floor:7.2f}x"
        )


if __name__ == "__main__":
    main()
