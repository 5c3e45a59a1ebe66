"""`fleet apply` and `fleet unlock` on fake hosts, where apply must not go through: a lock
another apply holds refuses, naming who, until `fleet unlock --force`; without a terminal
it asks for --auto-approve; a seat whose engine runs without its KV flag rolls back; a
saved plan the live fleet moved away from is refused.

The same command line as on a real fleet (`reconciler.cli.run`), its sessions handed to
fake hosts (tests/unit/cli/fake_fleet.py); none of these needs a real sshd, Docker engine
or proxy, so they left the lab (tests/integration/test_apply_guards_lab.py keeps the
engine crash and the proxy that refuses its config).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tests.gitlog import last_commit
from tests.unit.cli.fake_fleet import COMPOSE, MASTER_KEY, FakeFleet, make_fleet

LOCK = "/srv/fleet/.fleet.lock"
HOLDER = "ops@laptop pid 42 `fleet apply` since 2026-12-02T10:00:00Z"


@pytest.fixture
def one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeFleet:
    """A fleet of one seat (flash: MoE, NVFP4, MTP) on tower; its gateway already routes
    flash's aliases, so an apply changes only the seat."""
    for name, value in MASTER_KEY.items():
        monkeypatch.setenv(name, value)
    fake = make_fleet(tmp_path, seats=("flash",))
    fake.route_gateway()
    return fake


def apply(fake: FakeFleet) -> str:
    result = fake.fleet("apply", "--auto-approve", "--timeout", "120")
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_lock_contention_and_unlock(one: FakeFleet) -> None:
    tower = one.hosts["tower"]
    tower.files[LOCK] = HOLDER + "\n"
    locked = one.fleet("apply", "--auto-approve")
    assert locked.returncode == 1
    assert "tower is locked by ops@laptop pid 42 `fleet apply`" in locked.stderr
    assert tower.started == [] and tower.files[LOCK] == HOLDER + "\n", "nothing done, lock kept"
    refused = one.fleet("unlock", "tower")
    assert refused.returncode == 1 and "--force" in refused.stderr
    unlocked = one.fleet("unlock", "tower", "--force")
    assert unlocked.returncode == 0, unlocked.stderr
    assert f"removed the lock on tower (was: {HOLDER})" in unlocked.stdout
    assert "Applied: 1 to create" in apply(one)
    assert tower.started == ["flash"] and LOCK not in tower.files
    assert one.fleet("plan").returncode == 0


def test_apply_refuses_without_a_terminal(one: FakeFleet, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # as under CI or cron: no terminal
    result = one.fleet("apply")
    assert result.returncode == 1
    assert "pass --auto-approve" in result.stderr
    assert "+ seat flash on tower" in result.stdout, "the plan is shown first"
    assert one.hosts["tower"].started == [] and LOCK not in one.hosts["tower"].files


def test_kv_flag_missing_from_the_running_argv_rolls_back(one: FakeFleet) -> None:
    """A seat whose engine silently runs without its KV byte budget is not accepted."""
    apply(one)
    tower = one.hosts["tower"]
    before, compose_before = tower.containers["flash"].argv, tower.files[COMPOSE]
    one.edit("seats/flash.yaml", "port: 8026", "port: 8026\nenv: {VLLM_LOGGING_LEVEL: DEBUG}")
    tower.drops_arg["flash"] = "--kv-cache-memory-bytes"
    result = one.fleet("apply", "--auto-approve", "--timeout", "60")
    assert result.returncode == 1
    assert (
        "rolled back: seat flash on tower: running argv does not carry what the spec "
        "implies: kv_cache_bytes"
    ) in result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert tower.containers["flash"].argv == before and tower.containers["flash"].running
    assert tower.files[COMPOSE] == compose_before
    assert tower.started == ["flash", "flash", "flash"], "created, replaced, put back"
    log = last_commit(one.root).message
    assert log.startswith("edit seats/flash.yaml"), "no commit after a failed apply"


def test_stale_saved_plan_is_refused(one: FakeFleet) -> None:
    saved = one.root / "plan.json"
    assert one.fleet("plan", "--out", str(saved)).returncode == 2
    one.deploy("tower")
    result = one.fleet("apply", str(saved), "--auto-approve")
    assert result.returncode == 1
    assert "the live fleet moved since the plan was made: " in result.stderr
    assert "host/tower/seat/flash: absent -> " in result.stderr


def test_plan_says_what_the_recreate_costs_from_the_last_start(one: FakeFleet) -> None:
    """Apply records how long the seat took to start; the next plan of a recreate says it,
    and `plan --json` carries the strategy and the downtime."""
    apply(one)
    journal = one.hosts["tower"].files["/srv/fleet/.fleet-journal.jsonl"]
    (start,) = [json.loads(line) for line in journal.splitlines() if '"create-seat"' in line]
    one.edit("seats/flash.yaml", "port: 8026", "port: 8026\nstrategy: recreate")
    one.edit("seats/flash.yaml", "context: 65536", "context: 32768")
    took = max(round(float(start["seconds"])), 1)
    result = one.fleet("plan")
    assert result.returncode == 2
    assert (
        "~ seat flash: recreate (strategy: recreate in desired/); flash, summarizer "
        f"unavailable while it loads (last start took {took} s)"
    ) in result.stdout
    (action,) = [
        a for a in json.loads(one.fleet("plan", "--json").stdout)["actions"] if a["wave"] == 1
    ]
    assert action["strategy"] == "recreate"
    assert action["downtime"] == {
        "aliases": ["flash", "summarizer"],
        "last_start_seconds": float(start["seconds"]),
    }
