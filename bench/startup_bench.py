"""Benchmark the start-up of the offline commands against a bare `import pydantic, typer`.

Each command runs as a user runs it (a fresh interpreter, `python -m reconciler ...`), R
times, interleaved with the reference so that a noisy machine slows both alike. Prints
the median wall time (min-max) of each and its ratio to the reference's median.

usage: .venv/bin/python -m bench.startup_bench [--runs 15]
Figures, not assertions; the target is each command within 1.5x of the reference.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONFIG = REPO / "tests" / "corpus" / "model-configs" / "llama-3.1-8b-instruct_dense.config.json"
REFERENCE = ("import pydantic, typer", [sys.executable, "-c", "import pydantic, typer"])
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
    samples: dict[str, list[float]] = {REFERENCE[0]: []} | {name: [] for name in COMMANDS}
    for _ in range(runs):
        samples[REFERENCE[0]].append(timed(REFERENCE[1]))
        for name, args in COMMANDS.items():
            samples[name].append(timed([sys.executable, "-m", "reconciler", *args]))
    floor = statistics.median(samples[REFERENCE[0]])
    print(f"{'what':<24} {'median s':>9} {'min-max s':>13} {'x reference':>12}")
    for name, values in samples.items():
        median = statistics.median(values)
        spread = f"{min(values):.3f}-{max(values):.3f}"
        print(f"{name:<24} {median:9.3f} {spread:>13} {median / floor:11.2f}x")


if __name__ == "__main__":
    main()
