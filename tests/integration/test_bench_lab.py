"""`fleet bench` against the lab: the figures are the stand-in engines' configured behaviour
(decode rate, speculative acceptance, an out-of-memory depth), regressions against the
baseline give warnings and critical findings, and --write keeps the record in Git.

Also the lab's scripts of bench/ (apply, downtime, observe), each at its smallest size on
this session's lab instead of one of its own, so that none rots unnoticed (the offline
ones run in tests/unit/test_bench_scripts.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from unittest import mock

import pytest

from bench import apply_bench, downtime_bench, observe_bench
from tests.gitlog import last_commit
from tests.integration.helpers import FleetRepo, make_repo
from tests.lab.lab import Lab

pytestmark = pytest.mark.lab
CODER_RATE, FLASH_RATE, ACCEPTANCE = 120.0, 80.0, 0.6


@pytest.fixture
def measured(clean_lab: Lab, tmp_path: Path) -> FleetRepo:
    """coder (an OOM at 1,500 prompt tokens) and flash (MTP k=3) running on tower."""
    repo = make_repo(tmp_path, clean_lab, seats=("coder", "flash"))
    coder = repo.desired / "seats" / "coder.yaml"
    coder.write_text(
        coder.read_text()
        + f"env: {{FLEET_LAB_TOKEN_RATE: '{CODER_RATE:g}', FLEET_LAB_OOM_AT_TOKENS: '1500'}}\n"
    )
    flash = repo.desired / "seats" / "flash.yaml"
    flash.write_text(
        flash.read_text() + f"env: {{FLEET_LAB_TOKEN_RATE: '{FLASH_RATE:g}', "
        f"FLEET_LAB_SPEC_ACCEPTANCE: '{ACCEPTANCE:g}'}}\n"
    )
    repo.commit("engines with known speeds")
    applied = repo.fleet("apply", "--auto-approve", "--timeout", "120")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    return repo


def bench(repo: FleetRepo, *args: str) -> tuple[int, dict[str, dict[str, object]]]:
    result = repo.fleet("bench", "--json", "--runs", "3", "--max-tokens", "128", *args)
    assert result.returncode in (0, 2), result.stdout + result.stderr
    return result.returncode, {s["seat"]: s for s in json.loads(result.stdout)["seats"]}


def slow(lab: Lab, container: str, factor: str) -> None:
    lab.docker("tower", "exec", container, "sh", "-c", f"echo {factor} > /tmp/fleet-lab-slowdown")


def test_bench_measures_records_and_raises_regressions(measured: FleetRepo) -> None:
    repo, lab = measured, measured.lab
    code, seats = bench(repo, "--write")
    assert code == 0
    coder, flash = seats["coder"], seats["flash"]
    for seat, rate in ((coder, CODER_RATE), (flash, FLASH_RATE)):
        decode = seat["decode_tok_s"]
        assert isinstance(decode, dict) and decode["n"] == 3
        assert abs(float(decode["median"]) - rate) <= 0.10 * rate, decode
    spec = flash["speculative"]
    assert isinstance(spec, dict)
    assert abs(float(spec["acceptance_rate"]) - ACCEPTANCE) <= 0.05 * ACCEPTANCE
    assert abs(float(spec["mean_acceptance_length"]) - (1 + 3 * ACCEPTANCE)) <= 0.05 * 2.8
    head = last_commit(repo.root, files=True)
    assert head.message.startswith("fleet bench: 2 seat(s) measured")
    assert sorted(head.files) == [
        "inventory/BENCH.json",
        "inventory/INVENTORY.json",
        "inventory/INVENTORY.md",
    ]
    assert "## Measured" in (repo.root / "inventory" / "INVENTORY.md").read_text()

    through = repo.fleet("bench", "--json", "--via", "gateway", "--seat", "coder", "--runs", "1")
    assert through.returncode == 0, through.stdout + through.stderr  # by alias, as clients see it
    gateway = json.loads(through.stdout)["seats"][0]
    assert gateway["seat"] == "coder" and gateway["decode_tok_s"]["n"] == 1

    slow(lab, "fleet-tower-coder-1", "0.6")  # 40% slower: a warning
    slow(lab, "fleet-tower-flash-1", "0.4")  # 60% slower: critical
    code, seats = bench(repo)
    assert code == 2
    assert (seats["coder"]["regression"], seats["flash"]["regression"]) == ("warning", "critical")
    slow(lab, "fleet-tower-coder-1", "1")
    slow(lab, "fleet-tower-flash-1", "1")

    code, seats = bench(repo, "--depth")
    coder_depth, flash_depth = seats["coder"]["prefill"], seats["flash"]["prefill"]
    assert isinstance(flash_depth, dict) and flash_depth["result"] == "clean"
    assert int(flash_depth["tokens"]) >= int(0.95 * 65536)
    assert isinstance(coder_depth, dict) and coder_depth["result"] == "failed"
    assert "OutOfMemoryError" in str(coder_depth["log_line"]) or "EngineDead" in str(
        coder_depth["log_line"]
    )

    repo.edit("seats/flash.yaml", "context: 65536", "context: 49152")
    changed = repo.fleet("apply", "--auto-approve", "--seat", "flash", "--timeout", "120")
    assert changed.returncode == 0, changed.stdout + changed.stderr
    inventory = repo.fleet("inventory")
    lines = [line for line in inventory.stdout.splitlines() if line.startswith("| `flash`")]
    assert any("**stale**" in line for line in lines), inventory.stdout

    lab.docker("tower", "stop", "-t", "0", "fleet-tower-coder-1")
    stopped = repo.fleet("bench", "--seat", "coder")
    assert stopped.returncode == 1 and "is not running" in stopped.stderr
    assert "Traceback" not in stopped.stderr


def test_the_lab_bench_scripts_run_at_their_smallest_size(clean_lab: Lab, tmp_path: Path) -> None:
    with mock.patch.dict(os.environ):  # observe_bench points the environment at the lab
        rows = observe_bench.on_lab(clean_lab, tmp_path / "observe", ["tower"], runs=1)
    assert [name for name, _, _ in rows][-1] == "observe_fleet in-process"
    assert all(len(times) == 1 for _, times, _ in rows)
    assert "tower=1" in rows[-1][2]  # round trips: the one fact script

    # the cheapest row: coder recreated, its engine loading at once (a gateway row restarts
    # a proxy, a minute on a busy machine)
    smallest = downtime_bench.Scenario(
        "seat recreate", downtime_bench.nothing, downtime_bench.seat_load(0, "recreate")
    )
    seconds, report = downtime_bench.run(clean_lab, tmp_path / "downtime", smallest, 1, 1.0)
    assert seconds > 0 and sorted(report.aliases) == sorted(smallest.aliases)

    wall, wave, hosts = apply_bench.one_run(clean_lab, tmp_path / "apply", load=0)
    assert sorted(hosts) == ["rig", "tower"] and 0 < wave <= wall
