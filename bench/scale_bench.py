"""Benchmark the pure core at fleet scale: load+validate, plan and inventory of N seats.

For each size it generates a synthetic fleet in memory: hosts of 8 GPUs with 8 seats each
(one GPU a seat), 2 aliases per seat, a gateway config that routes every alias, and an
Observation in sync built as the plan tests build one (`tests.unit.plan.fakes.in_sync`).
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

from fleet.gateways.litellm.config import read_config
from fleet.observed.models import Observation
from fleet.plan.plan import make_plan
from fleet.report.inventory import build_inventory
from fleet.report.inventory_text import render_markdown
from fleet.spec.load import load_fleet
from fleet.spec.models import DesiredFleet
from fleet.spec.validate import validate_fleet
from tests.unit.plan.fakes import in_sync

GPUS_PER_HOST = 8
GPU = "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"

FLEET = """\
# Fleet-wide settings and defaults.
name: bench-fleet
concurrency_band: {min: 1.2, max: 2.5}
images:
  floating_tags: [latest, nightly, main]
  digest: ignore
"""

HOST = """\
# GPU host {index}.
ssh:
  alias: {name}
address: 10.{high}.{low}.1
publish_address: 10.{high}.{low}.1
gpus:
{gpus}
compose_dir: /srv/fleet
models_root: /models
"""

SEAT = """\
# Seat {index}: one GPU, a KV budget, MTP drafting.
host: {host}
gpus: [{gpu}]
engine: vllm
image: vllm/vllm-openai:v0.18.0
model: /models/Model-{index}
served_name: {name}
context: 32768
kv_cache_bytes: 10GiB
speculative:
  method: mtp
  num_tokens: 3
port: {port}
aliases: [{name}, {name}-chat]
"""

GATEWAY = """\
# The LiteLLM proxy.
host: gateway
config_path: /etc/litellm/config.yaml
url: http://10.255.255.1:4000
master_key: ${LITELLM_MASTER_KEY}
restart:
  command: fleet-gateway-restart
provider_prefix: hosted_vllm/
alias_params:
  s00000: {max_tokens: 256, temperature: 0.2}
fallbacks:
  s00000: [s00001]
retired_aliases: [old-alias]
"""


def desired_files(seats: int) -> dict[str, str]:
    """The text of every desired/ file of a fleet of `seats` seats."""
    hosts = -(-seats // GPUS_PER_HOST)
    files = {"fleet.yaml": FLEET, "gateway.yaml": GATEWAY}
    files["hosts/gateway.yaml"] = "ssh:\n  alias: gateway\naddress: 10.255.255.1\ngpus: []\n"
    gpus = "".join(
        f"  - {{index: {i}, name: {GPU}, memory: 97887MiB}}\n" for i in range(GPUS_PER_HOST)
    )
    for h in range(hosts):
        name = f"h{h:04d}"
        files[f"hosts/{name}.yaml"] = HOST.format(
            index=h, name=name, high=h // 250, low=h % 250, gpus=gpus.rstrip("\n")
        )
    for s in range(seats):
        host, gpu = divmod(s, GPUS_PER_HOST)
        files[f"seats/s{s:05d}.yaml"] = SEAT.format(
            index=s, host=f"h{host:04d}", gpu=gpu, name=f"s{s:05d}", port=8000 + gpu
        )
    return files


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
