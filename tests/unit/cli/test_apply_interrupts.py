"""`fleet apply` interrupted, and what it leaves: SIGTERM or SIGINT during a seat's step
rolls the apply back, between waves it stops with the seat wave kept; either way the lock
is released, the journal and an inventory commit say what was done, and the exit is
128 + the signal. A lock left by a pid of this machine that is gone is taken over by the
next apply, and an apply with nothing to change commits an inventory that no longer
matches the fleet.

Fake hosts (tests/unit/cli/fake_fleet.py), the real command line and real signals sent
to this process; tests/integration/test_gateway_bluegreen_lab.py sends SIGTERM to a real
`fleet apply`.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
from pathlib import Path

import git
import pytest

from reconciler.workflows.interrupt import Interrupt
from tests.fakes.gateway import FakeGateway
from tests.gitlog import last_commit
from tests.unit.cli.fake_fleet import GATEWAY_CONFIG, MASTER_KEY, FakeFleet, make_fleet

LOCK = "/srv/fleet/.fleet.lock"
JOURNAL = "/srv/fleet/.fleet-journal.jsonl"


@pytest.fixture
def two(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeFleet:
    """coder and flash on tower, applied and committed; the gateway host runs its proxies
    behind the front (tests/fakes/gateway.py)."""
    for name, value in MASTER_KEY.items():
        monkeypatch.setenv(name, value)
    fake = make_fleet(tmp_path, seats=("coder", "flash"))
    gateway = fake.load().gateway
    assert gateway is not None
    config = fake.hosts["gateway"].files[GATEWAY_CONFIG]
    fake.hosts["gateway"] = FakeGateway(gateway, config, fake.clock).host
    result = fake.fleet("apply", "--auto-approve")
    assert result.returncode == 0, result.stdout + result.stderr
    return fake


@pytest.fixture
def handled(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Set once apply's signal handler has tripped its interrupt."""
    ran = threading.Event()
    trip = Interrupt.trip

    def tripped(self: Interrupt, signal_number: int) -> None:
        trip(self, signal_number)
        ran.set()

    monkeypatch.setattr(Interrupt, "trip", tripped)
    return ran


def signal_at_start(
    fake: FakeFleet, service: str, sig: signal.Signals, handled: threading.Event
) -> None:
    """Send `sig` to this process when `service` is (re)created, and wait until the main
    thread ran apply's handler for it."""

    def before_up(started: str) -> None:
        if started == service:
            fake.hosts["tower"].before_up = None
            os.kill(os.getpid(), sig)
            assert handled.wait(30), f"apply's handler never ran for {sig.name}"

    fake.hosts["tower"].before_up = before_up


def steps(fake: FakeFleet) -> list[dict[str, str]]:
    return [json.loads(line) for line in fake.hosts["tower"].files[JOURNAL].splitlines()]


def head_message(fake: FakeFleet) -> str:
    return str(last_commit(fake.root).message)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "sigint"])
def test_a_signal_during_a_seat_step_rolls_the_apply_back(
    two: FakeFleet, sig: signal.Signals, handled: threading.Event
) -> None:
    tower = two.hosts["tower"]
    two.edit("seats/coder.yaml", "context: 2048", "context: 4096\nstrategy: recreate")
    two.edit("seats/flash.yaml", "context: 65536", "context: 32768\nstrategy: recreate")
    before = {name: c.argv for name, c in tower.containers.items()}
    signal_at_start(two, "coder", sig, handled)
    result = two.fleet("apply", "--auto-approve")
    assert result.returncode == 128 + sig, result.stdout + result.stderr
    assert f"error: interrupted by {sig.name}: rolled back what this apply changed" in (
        result.stderr
    )
    assert LOCK not in tower.files, "the lock is released"
    assert {name: c.argv for name, c in tower.containers.items()} == before
    assert all(c.running for c in tower.containers.values())
    assert steps(two)[-1]["step"] == "rolled-back"
    message = head_message(two)
    assert message.startswith(f"fleet apply: interrupted by {sig.name}: rolled back")
    assert "- rolled back: seat coder on tower (serving again)" in message
    assert "flash" not in [s["target"] for s in steps(two)[-3:] if "target" in s]


def test_a_signal_after_the_seat_wave_keeps_it_and_stops_before_the_gateway(
    two: FakeFleet, handled: threading.Event
) -> None:
    tower = two.hosts["tower"]
    two.edit("seats/flash.yaml", "context: 65536", "context: 32768\nstrategy: recreate")
    signal_at_start(two, "flash", signal.SIGTERM, handled)
    result = two.fleet("apply", "--auto-approve")
    assert result.returncode == 143, result.stdout + result.stderr
    assert (
        "error: interrupted by SIGTERM: stopped before the gateway wave (1 step(s) done and "
        "kept); the plan shows what remains"
    ) in result.stderr
    assert LOCK not in tower.files
    assert "--max-model-len 32768" in " ".join(tower.containers["flash"].argv)
    assert [s["step"] for s in steps(two)[-2:]] == ["replace-seat", "interrupted"]
    message = head_message(two)
    assert message.startswith("fleet apply: interrupted by SIGTERM: stopped before the gateway")
    assert "- replace seat flash on tower" in message
    plan = two.fleet("plan")
    assert "~ seat flash" not in plan.stdout, "the seat wave is done"
    assert "~ alias flash" in plan.stdout, "the gateway is what remains"
    assert "an apply did not finish; steps done: " in plan.stdout
    assert two.fleet("apply", "--auto-approve").returncode == 0
    assert two.fleet("plan").returncode == 0


def test_a_lock_of_a_gone_pid_on_this_machine_is_taken_over(two: FakeFleet) -> None:
    """A stale lock (this machine, pid gone) is no longer a manual step: plan says the
    next apply takes it over, and that apply does, with a journal line saying so."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    holder = f"ops@{socket.gethostname()} pid {gone.pid} `fleet apply` since 2026-12-02T10:00:00Z"
    two.hosts["tower"].files[LOCK] = holder + "\n"
    stale = f"stale lock: pid {gone.pid} on this machine is gone; the next `fleet apply`"
    two.edit("seats/flash.yaml", "context: 65536", "context: 32768")
    assert f"tower: {stale}" in two.fleet("plan").stdout
    result = two.fleet("apply", "--auto-approve")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"tower: took over the lock of an apply that is gone ({holder})" in result.stdout
    assert [s["step"] for s in steps(two)][-4:-2] == ["recovered", "begin"]
    assert LOCK not in two.hosts["tower"].files
    elsewhere = holder.replace(f"@{socket.gethostname()} ", "@another-machine ")
    two.hosts["tower"].files[LOCK] = elsewhere + "\n"
    assert "apply in progress (by ops@another-machine" in two.fleet("plan").stdout
    two.edit("seats/flash.yaml", "context: 32768", "context: 16384")
    refused = two.fleet("apply", "--auto-approve")
    assert refused.returncode == 1
    assert "if that apply is gone, run `fleet unlock tower --force`" in refused.stderr


def test_nothing_to_do_but_a_stale_inventory_commits_the_refreshed_one(two: FakeFleet) -> None:
    """As after an apply that died before its inventory commit: the commit is made now."""
    two.edit("seats/flash.yaml", "context: 65536", "context: 32768\nstrategy: recreate")
    assert two.fleet("apply", "--auto-approve").returncode == 0
    git.Repo(two.root).git.reset("--hard", "HEAD~1")  # the fleet runs what the lost commit said
    assert "Drift" in two.fleet("plan").stdout
    result = two.fleet("apply", "--auto-approve")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Nothing to do: the live fleet matches desired/." in result.stdout
    assert "The committed inventory was stale: committed INVENTORY.md and" in result.stdout
    assert head_message(two).startswith(
        "fleet apply: the inventory refreshed to match the live fleet"
    )
    assert "Drift" not in two.fleet("plan").stdout
