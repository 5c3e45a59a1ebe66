"""Benchmark what clients see during an apply: failed requests and p50/p95 latency per
alias, side by side for each way of applying a change, in one run.

Brings up the lab (tower, rig, gateway with its nginx front), applies a small fleet once,
then for each scenario: prepares the fleet repository (e.g. a gateway without a front),
commits the scenario's change, and applies it with bounded client load through the
gateway's URL (`tests/lab/load.py`: `--clients` clients x `--rate` requests/s per alias).
Rows are pluggable: a `Scenario` names its prepare step, its change and the aliases it
loads; append one to `SCENARIOS` (seat recreate vs surge go there too).

usage: .venv/bin/python -m bench.downtime_bench [--clients 2] [--rate 4] [--only NAME]...
Takes the lab over (brought down at the end). Figures, not assertions.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fleet.yamltext import dump_yaml, make_yaml
from tests.integration.helpers import FleetRepo, apply, drop_front, make_repo
from tests.lab.lab import Lab
from tests.lab.load import ClientLoad, LoadReport

SEATS = ("coder", "reason")
Step = Callable[[FleetRepo], None]


@dataclass(frozen=True)
class Scenario:
    """One row group: how the fleet is set up, the change applied, the aliases loaded."""

    name: str
    prepare: Step
    change: Step
    aliases: tuple[str, ...] = ("chat", "coder")


def nothing(_: FleetRepo) -> None:
    """No preparation: the example fleet as it is (its gateway has a front)."""


def alias_params(value: float) -> Step:
    """A gateway-only change: `chat` gets another temperature."""

    def change(repo: FleetRepo) -> None:
        yaml = make_yaml()
        path = repo.desired / "gateway.yaml"
        tree = yaml.load(path.read_text())
        tree["alias_params"] = {"chat": {"temperature": value}}
        path.write_text(dump_yaml(tree))
        repo.commit(f"chat at temperature {value}")

    return change


SCENARIOS: list[Scenario] = [
    Scenario("gateway in place", drop_front, alias_params(0.3)),
    Scenario("gateway blue/green", nothing, alias_params(0.4)),
]


def run(
    lab: Lab, scratch: Path, scenario: Scenario, clients: int, rate: float
) -> tuple[float, LoadReport]:
    """Apply the scenario's change under load; (apply seconds, what the clients saw)."""
    lab.reset()
    repo = make_repo(scratch, lab, seats=SEATS)
    scenario.prepare(repo)
    apply(repo)
    scenario.change(repo)
    with ClientLoad(
        lab.gateway_url, lab.master_key, list(scenario.aliases), clients, rate, max_seconds=900
    ) as load:
        time.sleep(2.0)  # a baseline before the apply starts
        began = time.monotonic()
        apply(repo)
        seconds = time.monotonic() - began
        time.sleep(2.0)
    return seconds, load.report()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=2, help="clients per alias")
    parser.add_argument("--rate", type=float, default=4.0, help="requests/s per client")
    parser.add_argument("--only", action="append", default=[], help="scenario names to run")
    args = parser.parse_args()
    chosen = [s for s in SCENARIOS if not args.only or s.name in args.only]
    # proxies start from a fresh interpreter, as on a real gateway (tests/lab/README.md)
    os.environ.setdefault("FLEET_LAB_LITELLM_FORK", "0")
    lab = Lab()
    results = []
    with lab.locked():
        lab.up()
        try:
            for n, scenario in enumerate(chosen):
                with tempfile.TemporaryDirectory() as scratch:
                    results.append(
                        (
                            scenario,
                            *run(lab, Path(scratch) / f"s{n}", scenario, args.clients, args.rate),
                        )
                    )
        finally:
            lab.down()
    print(f"during one apply, {args.clients} clients x {args.rate:g} requests/s per alias")
    print(f"{'scenario':<22} {'apply':>7} {'alias':<10} {'failed':>11} {'p50':>8} {'p95':>8}")
    for scenario, seconds, report in results:
        for alias in scenario.aliases:
            line = report.aliases[alias]
            print(
                f"{scenario.name:<22} {seconds:6.1f}s {alias:<10} "
                f"{line.failed:>4}/{line.total:<6} {line.p50:7.3f}s {line.p95:7.3f}s"
            )


if __name__ == "__main__":
    main()
