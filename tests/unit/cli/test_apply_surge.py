"""`fleet apply` surging a seat on fake hosts: the new copy starts beside the old on the
seat's second port, the gateway moves blue/green behind its front, the old copy drains and
goes; plan is 0 after, and the next surge goes back to the first port. A new copy that
fails its gate is removed and the old one never stops serving. Seats sharing a GPU surge
one after another, and a recreate on that GPU never overlaps a surge. A host that stops
answering while the new copy starts fails the step at the call's bound (on the fake
clock) and the surge rolls back.

Fake hosts (tests/unit/cli/fake_fleet.py) and the real command line;
tests/integration/test_gateway_bluegreen_lab.py surges a real seat under client load.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from fleet.gateways.litellm.config import parse_gateway_config
from reconciler.adapters.silence import Watch, read_stdout
from tests.fakes.clock import FakeClock
from tests.fakes.gateway import FakeGateway
from tests.unit.cli.fake_fleet import GATEWAY_CONFIG, MASTER_KEY, FakeFleet, make_fleet

JOURNAL = "/srv/fleet/.fleet-journal.jsonl"
OOM = "ERROR 12-01 10:00:09 [core.py:700] torch.OutOfMemoryError: CUDA out of memory."


def applied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seats: tuple[str, ...]) -> FakeFleet:
    """These seats applied and committed; the gateway runs its proxies behind the front."""
    for name, value in MASTER_KEY.items():
        monkeypatch.setenv(name, value)
    fake = make_fleet(tmp_path, seats=seats)
    gateway = fake.load().gateway
    assert gateway is not None
    config = fake.hosts["gateway"].files[GATEWAY_CONFIG]
    front = FakeGateway(gateway, config, fake.clock)
    fake.hosts["gateway"] = front.host
    fake.front = front  # type: ignore[attr-defined]
    result = fake.fleet("apply", "--auto-approve")
    assert result.returncode == 0, result.stdout + result.stderr
    return fake


@pytest.fixture
def two(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeFleet:
    return applied(tmp_path, monkeypatch, ("coder", "flash"))


def routes(fake: FakeFleet) -> dict[str, str]:
    """alias -> api_base of fleet's gateway entries."""
    config = parse_gateway_config(fake.hosts["gateway"].files[GATEWAY_CONFIG])
    return {alias: entry.address for alias, entry in config.by_alias().items()}


def services(fake: FakeFleet) -> dict[str, list[str]]:
    """compose service -> its published ports, of the tower's running containers."""
    tower = fake.hosts["tower"]
    return {name: [f"{p[1]}" for p in c.ports] for name, c in tower.containers.items()}


def compose_steps(fake: FakeFleet) -> list[str]:
    """`up SERVICE` / `rm SERVICE`, in the order the tower ran them."""
    found = []
    for kind, command in fake.hosts["tower"].journal:
        match = re.search(r" (up -d --no-deps|rm --stop --force) (\S+)$", command)
        if kind == "exec" and match:
            found.append(f"{match.group(1).split()[0]} {match.group(2)}")
    return found


def test_a_seat_with_room_surges_to_its_second_port_and_back(two: FakeFleet) -> None:
    two.edit(
        "seats/coder.yaml", "aliases: [coder, autocomplete]", "aliases: [coder, autocomplete, fim]"
    )
    two.edit("seats/coder.yaml", "context: 2048", "context: 4096")
    plan = two.fleet("plan")
    assert "seat coder: surge (GPU 0 has" in plan.stdout, plan.stdout
    two.hosts["tower"].journal.clear()
    result = two.fleet("apply", "--auto-approve")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "tower: surge seat coder: start coder-b on port 9030 beside coder" in result.stdout
    assert compose_steps(two) == ["up coder-b", "rm coder"]
    assert services(two)["coder-b"] == ["9030"] and "coder" not in services(two)
    assert {a: b for a, b in routes(two).items() if a in ("coder", "autocomplete", "fim")} == {
        "coder": "http://127.0.0.11:9030/v1",
        "autocomplete": "http://127.0.0.11:9030/v1",
        "fim": "http://127.0.0.11:9030/v1",
    }
    assert two.front.unserved == []  # type: ignore[attr-defined]
    assert "fim" in two.front.serving()  # type: ignore[attr-defined]
    again = two.fleet("plan")
    assert again.returncode == 0, again.stdout + again.stderr
    inventory = (two.root / "inventory" / "INVENTORY.md").read_text()
    assert re.search(r"coder.*9030", inventory), inventory
    rendered = two.fleet("render", "tower").stdout  # what apply would write now
    assert "coder-b:" in rendered and "9030:9030" in rendered, rendered
    as_declared = two.fleet("render", "tower", "--declared").stdout
    assert "coder-b:" not in as_declared and "8030:8030" in as_declared, as_declared
    two.edit("seats/coder.yaml", "context: 4096", "context: 8192")
    two.hosts["tower"].journal.clear()
    back = two.fleet("apply", "--auto-approve")
    assert back.returncode == 0, back.stdout + back.stderr
    assert compose_steps(two) == ["up coder", "rm coder-b"]
    assert services(two)["coder"] == ["8030"] and "coder-b" not in services(two)
    assert routes(two)["coder"] == "http://127.0.0.11:8030/v1"
    assert two.fleet("plan").returncode == 0


def test_a_surge_whose_new_copy_fails_its_gate_leaves_the_old_one_serving(
    two: FakeFleet,
) -> None:
    tower = two.hosts["tower"]
    before = tower.containers["coder"].id
    config = two.hosts["gateway"].files[GATEWAY_CONFIG]
    two.edit("seats/coder.yaml", "context: 2048", "context: 4096")
    tower.crashes = {"coder-b": OOM}
    tower.journal.clear()
    result = two.fleet("apply", "--auto-approve")
    assert result.returncode != 0
    assert (
        "the new copy coder-b on port 9030 is removed; the old copy coder kept serving on "
        "port 8030" in result.stderr
    ), result.stderr
    assert "rolled back" in result.stderr
    assert compose_steps(two) == ["up coder-b", "rm coder-b"]
    assert tower.containers["coder"].id == before and tower.containers["coder"].running
    assert "coder-b" not in tower.containers
    assert two.hosts["gateway"].files[GATEWAY_CONFIG] == config
    assert two.front.unserved == []  # type: ignore[attr-defined]
    steps = [json.loads(line)["step"] for line in tower.files[JOURNAL].splitlines()]
    assert steps[-1] == "rolled-back"


def test_seats_sharing_a_gpu_surge_one_at_a_time_and_a_recreate_never_overlaps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = applied(tmp_path, monkeypatch, ("coder", "embed", "rerank", "sec", "reason"))
    fake.edit("seats/embed.yaml", "context: 1024", "context: 512\nstrategy: surge")
    fake.edit("seats/rerank.yaml", "context: 1024", "context: 512\nstrategy: surge")
    fake.edit("seats/coder.yaml", "context: 2048", "context: 4096\nstrategy: surge")
    fake.edit("seats/sec.yaml", "context: 262144", "context: 131072\nstrategy: recreate")
    fake.hosts["tower"].journal.clear()
    result = fake.fleet("apply", "--auto-approve")
    assert result.returncode == 0, result.stdout + result.stderr
    # each surge's old copy is gone before the next seat on the host starts (GPU 0: coder
    # and sec; GPU 1: embed and rerank)
    assert compose_steps(fake) == [
        "up coder-b",
        "rm coder",
        "up embed-b",
        "rm embed",
        "up rerank-b",
        "rm rerank",
        "up sec",
    ]
    assert fake.front.unserved == []  # type: ignore[attr-defined]
    assert fake.fleet("plan").returncode == 0


def test_a_seat_removed_after_a_surge_goes_from_its_second_port(two: FakeFleet) -> None:
    two.edit("seats/coder.yaml", "context: 2048", "context: 4096")
    assert two.fleet("apply", "--auto-approve").returncode == 0
    assert "coder-b" in services(two)
    (two.desired / "seats" / "coder.yaml").unlink()
    two.edit("gateway.yaml", "code-legacy", "code-legacy")  # commits the removal too
    result = two.fleet("apply", "--auto-approve", "--prune")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "coder-b" not in services(two) and "coder" not in services(two)
    assert "coder-b:" not in two.hosts["tower"].files["/srv/fleet/compose.yaml"]


class Frozen:
    """The channel of a command on a host that stopped answering: every read times out
    (after moving the fake clock by the channel's timeout, as a real one waits)."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock, self.timeout = clock, 0.0

    def settimeout(self, timeout: float | None) -> None:
        self.timeout = timeout or 0.0

    def recv(self, size: int) -> bytes:
        self.clock.now += self.timeout
        raise TimeoutError("timed out")


def test_a_host_that_stops_answering_while_the_new_copy_starts_fails_the_step_and_rolls_back(
    two: FakeFleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    tower = two.hosts["tower"]
    before = tower.containers["coder"].id
    answer = tower.run
    bounds: list[float] = []

    def run(command: str, *, stdin: str | None = None, timeout: float | None = None) -> Any:
        if command.endswith("up -d --no-deps coder-b"):  # the SSH channel goes silent
            bounds.append(timeout or 120.0)
            watch = Watch("tower", "`docker`", bounds[-1], two.clock)
            read_stdout(Frozen(two.clock), watch, 1024)
        return answer(command, stdin=stdin, timeout=timeout)

    monkeypatch.setattr(tower, "run", run)
    two.edit("seats/coder.yaml", "context: 2048", "context: 4096")
    started = two.clock.now
    result = two.fleet("apply", "--auto-approve")
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"no reply from tower for {bounds[0]:.0f} s (waiting on `docker`)" in result.stderr
    assert "rolled back" in result.stderr, result.stderr
    assert "coder-b" not in tower.containers
    assert tower.containers["coder"].id == before and tower.containers["coder"].running
    assert two.clock.now - started < bounds[0] + 60, "the step gave up at its bound"
