"""Benchmark the pure core at fleet scale: load+validate, plan and inventory of N seats.

For each size it generates a synthetic fleet in memory (`bench.synthetic_fleet`: hosts of
8 GPUs with 8 seats each, one GPU a seat, 2 aliases per seat, a gateway config that routes
every alias) and the Observation of that fleet in sync, from the benchmark's own templates.
Then it times each stage once, wall and CPU side by side, with the time per seat so that
linear growth shows as a flat last column:
- load + validate: `load_fleet` and `validate_fleet` of the seat, host and fleet files;
- make_plan: the whole pure plan (seat diffs, alias actions and the gateway edit);
- build_inventory and render_markdown of it.

usage: .venv/bin/python -m bench.scale_bench [--seats 100,1000,5000] [--without-gc]
Figures, not assertions. Building the observation is not timed; the gateway config's parse
cache is emptied after it, so that make_plan pays for parsing the config, as a plan run
against a saved observation would. `--without-gc` pauses the garbage collector while a stage
runs: its collections scan the whole live heap (the observation of 5,000 seats is large),
which is real cost but hides whether the stage's own work grows linearly.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from typing import Any

from bench.synthetic_fleet import desired_files, in_sync
from fleet.gateways.litellm.config import read_config
from fleet.observed.models import Observation
from fleet.plan.plan import make_plan
from fleet.report.inventory import build_inventory
from fleet.report.inventory_text import render_markdown
from fleet.spec.load import load_fleet
from fleet.spec.models import DesiredFleet
from fleet.spec.validate import validate_fleet


def timed(stage: Callable[[], Any], without_gc: bool = False) -> tuple[Any, float, float]:
    """The stage's result, its wall seconds and its CPU seconds."""
    gc.collect()
    if without_gc:
        gc.disable()
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        result = stage()
    finally:
        gc.enable()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def load_and_validate(files: dict[str, str]) -> DesiredFleet:
    """The fleet, after checking that the generated files are valid."""
    loaded = load_fleet(files)
    problems = [p for p in validate_fleet(loaded) if p.severity.value == "error"]
    if loaded.fleet is None or problems:
        raise SystemExit(f"the generated fleet is invalid: {problems[:3]}")
    return loaded.fleet


def run(seats: int, without_gc: bool) -> list[tuple[str, float, float]]:
    """(stage, wall s, CPU s) for one fleet size."""
    files = desired_files(seats)
    desired, *load = timed(lambda: load_and_validate(files), without_gc)
    observation: Observation = in_sync(desired)
    read_config.cache_clear()  # the plan pays for its own parse of the gateway config
    plan, *plan_times = timed(lambda: make_plan(desired, observation), without_gc)
    if not plan.empty:
        raise SystemExit(f"the fleet in sync planned actions: {plan.summary()}")
    inventory, *inventory_times = timed(lambda: build_inventory(desired, observation), without_gc)
    _, *markdown = timed(lambda: render_markdown(inventory), without_gc)
    return [
        ("load + validate", *load),
        ("make_plan", *plan_times),
        ("build_inventory", *inventory_times),
        ("render_markdown", *markdown),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seats", default="100,1000,5000", help="comma-separated sizes")
    parser.add_argument("--without-gc", action="store_true", help="pause the GC in stages")
    args = parser.parse_args()
    print(f"{'seats':>6} {'stage':<16} {'wall s':>8} {'CPU s':>8} {'CPU ms/seat':>12}")
    for seats in [int(n) for n in args.seats.split(",")]:
        for stage, wall, cpu in run(seats, args.without_gc):
            print(f"{seats:>6} {stage:<16} {wall:8.3f} {cpu:8.3f} {1000 * cpu / seats:12.3f}")


if __name__ == "__main__":
    main()
