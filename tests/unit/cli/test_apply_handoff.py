"""`fleet apply` recreating a seat whose alias has a healthy gateway fallback, on fake hosts.

coder (aliases coder, autocomplete) and flash (flash, summarizer) behind the front, with
`fallbacks: {coder: [summarizer]}`; coder is pinned to `strategy: recreate` and changes.
Apply moves `coder` to flash (blue/green), drains the old coder, recreates it behind its
gate, then moves `coder` back; every recreate drains before it stops the engine, handoff
or not. A failed gate ends with the alias back on coder, after the previous copy serves.

Fake hosts (tests/unit/cli/fake_fleet.py, tests/fakes/gateway.py) and the real command
line; tests/integration/test_gateway_bluegreen_lab.py and test_systemd.py recreate real
seats under client load with streams in flight.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ruamel.yaml import YAML

from fleet.gateways.litellm.config import parse_gateway_config
from tests.fakes.channel import FakeChannel
from tests.unit.cli.fake_fleet import GATEWAY_CONFIG, MASTER_KEY, FakeFleet, make_fleet
from tests.unit.cli.test_apply_surge import OOM, compose_steps

TOWER = "127.0.0.11"
CODER = "http://127.0.0.11:8030/v1"
FLASH = "http://127.0.0.11:8026/v1"
HANDOFF = [
    "tower: replace seat coder",
    "tower: hand off seat coder's aliases while it is recreated: coder served by summarizer",
    "gateway: point the front at the proxy on",
    "tower: drain seat coder on port 8030",
    "tower: seat coder healthy",
    "tower: hand coder back to seat coder",
    "gateway: point the front at the proxy on",
]
PLAIN = [
    "tower: replace seat coder",
    "tower: drain seat coder on port 8030",
    "tower: seat coder healthy",
]


def reach_tower(fake: FakeFleet) -> None:
    """The gateway host reaches tower's engines, as on a real network (its probes of the
    backends answer: a fallback's seat is healthy only when its backend answers)."""
    gateway, tower = fake.hosts["gateway"], fake.hosts["tower"]
    own = gateway.open_tcp

    def open_tcp(address: str, port: int, timeout: float = 5.0) -> FakeChannel:
        if address == TOWER:
            return tower.open_tcp(address, port, timeout)
        return own(address, port, timeout)

    gateway.open_tcp = open_tcp  # type: ignore[method-assign]


def with_fallbacks(fake: FakeFleet, fallbacks: dict[str, list[str]]) -> None:
    """gateway.yaml's `fallbacks`, committed."""
    yaml = YAML()
    path = fake.desired / "gateway.yaml"
    gateway = yaml.load(path)
    gateway["fallbacks"] = fallbacks
    yaml.dump(gateway, path)
    fake.commit("fallbacks")


@pytest.fixture
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeFleet:
    """coder and flash applied, `coder` falling back to `summarizer`."""
    for name, value in MASTER_KEY.items():
        monkeypatch.setenv(name, value)
    fake = make_fleet(tmp_path, seats=("coder", "flash"))
    reach_tower(fake)
    with_fallbacks(fake, {"coder": ["summarizer"]})
    result = fake.fleet("apply", "--auto-approve")
    assert result.returncode == 0, result.stdout + result.stderr
    return fake


def routes(fake: FakeFleet) -> dict[str, str | None]:
    config = parse_gateway_config(fake.hosts["gateway"].files[GATEWAY_CONFIG])
    return {alias: entry.address for alias, entry in config.by_alias().items()}


def in_order(output: str, steps: list[str]) -> list[str]:
    """The steps found in the output, each after the one before it."""
    found, at = [], 0
    for step in steps:
        where = output.find(step, at)
        if where < 0:
            break
        found.append(step)
        at = where + len(step)
    return found


def recreate(fake: FakeFleet, extra: str = "") -> None:
    fake.edit("seats/coder.yaml", "context: 2048", f"context: 4096\nstrategy: recreate{extra}")


@pytest.mark.parametrize(
    ("extra", "fallbacks", "line", "steps"),
    [
        (
            "",
            None,
            "coder served by summarizer while it loads (last start took 1 s); "
            "autocomplete unavailable",
            HANDOFF,
        ),
        (
            "\nhandoff: false",
            None,
            "autocomplete, coder unavailable while it loads (last start took 1 s)",
            PLAIN,
        ),
        (
            "",
            {},
            "autocomplete, coder unavailable while it loads (last start took 1 s)",
            PLAIN,
        ),
    ],
    ids=["fallback-healthy", "handoff-false", "no-fallback"],
)
def test_a_recreate_hands_off_drains_recreates_and_hands_back_in_that_order(
    fleet: FakeFleet,
    extra: str,
    fallbacks: dict[str, list[str]] | None,
    line: str,
    steps: list[str],
) -> None:
    if fallbacks is not None:
        with_fallbacks(fleet, fallbacks)
        assert fleet.fleet("apply", "--auto-approve").returncode == 0
    recreate(fleet, extra)
    plan = fleet.fleet("plan")
    assert plan.returncode == 2
    assert f"~ seat coder: recreate (strategy: recreate in desired/); {line}" in plan.stdout, (
        plan.stdout
    )
    fleet.hosts["tower"].journal.clear()
    front = fleet.front
    assert front is not None
    front.events.clear()
    result = fleet.fleet("apply", "--auto-approve")
    assert result.returncode == 0, result.stdout + result.stderr
    assert in_order(result.stdout, steps) == steps, result.stdout
    assert ("hand off" in result.stdout) is (steps is HANDOFF)
    assert compose_steps(fleet) == ["up coder"]
    assert routes(fleet)["coder"] == CODER and routes(fleet)["summarizer"] == FLASH
    assert front.unserved == [], "a moment without a proxy behind the front"
    assert fleet.fleet("plan").returncode == 0


def test_while_handed_off_the_fallback_serves_the_alias(fleet: FakeFleet) -> None:
    """The gateway as it stands when the old coder stops: `coder` routed to flash's seat,
    with flash's model and context; `autocomplete` still on coder (it has no fallback)."""
    recreate(fleet)
    seen: dict[str, str | None] = {}
    tower = fleet.hosts["tower"]
    original = tower.compose_up

    def spy(*args: str) -> object:
        seen.update(routes(fleet))
        return original(*args)

    tower.compose_up = spy  # type: ignore[method-assign]
    result = fleet.fleet("apply", "--auto-approve")
    assert result.returncode == 0, result.stdout + result.stderr
    assert (seen["coder"], seen["autocomplete"]) == (FLASH, CODER)
    entry = parse_gateway_config(fleet.hosts["gateway"].files[GATEWAY_CONFIG]).by_alias()
    assert entry["coder"].seat == "coder"


def test_a_failed_gate_ends_with_the_alias_back_on_its_own_seat(fleet: FakeFleet) -> None:
    """The new coder dies on start: the previous copy starts again, then `coder` moves back
    to it; the rollback's gateway switch comes after the seat serves."""
    config = fleet.hosts["gateway"].files[GATEWAY_CONFIG]
    recreate(fleet)
    fleet.hosts["tower"].crashes = {"coder": OOM}
    result = fleet.fleet("apply", "--auto-approve")
    output = result.stdout + result.stderr
    assert result.returncode == 1 and "rolled back" in output, output
    steps = [
        "tower: hand off seat coder's aliases",
        "tower: restart the previous seat coder",
        "put the previous gateway config back",
    ]
    assert in_order(output, steps) == steps, output
    assert fleet.hosts["gateway"].files[GATEWAY_CONFIG] == config
    assert routes(fleet)["coder"] == CODER
    front = fleet.front
    assert front is not None and front.unserved == []
