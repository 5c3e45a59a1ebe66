"""`fleet plan` and `fleet apply` keeping Prometheus's target files in step with the seats,
on fake hosts: apply writes them (plan is 0 after), a surge moves its seat's target in the
same apply, a pruned seat's target goes in the same apply, a file edited by hand is a
finding and is written back, the gateway's token comes from its `${VAR}` and is never
printed. tests/integration/test_gateway_bluegreen_lab.py has a real Prometheus scrape them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from fleet.render import targets
from tests.unit.cli.fake_fleet import MASTER_KEY, FakeFleet
from tests.unit.cli.test_apply_surge import applied

FOLDER = "/etc/prometheus/fleet"
MONITORING = f"monitoring:\n  host: gateway\n  targets_dir: {FOLDER}\n"
EXPORTERS = "exporters:\n  node: {port: 9100}\n"


def monitored(fake: FakeFleet) -> FakeFleet:
    for rel, more in (("fleet.yaml", MONITORING), ("hosts/tower.yaml", EXPORTERS)):
        path = fake.desired / rel
        path.write_text(path.read_text() + more)
    fake.commit("monitoring")
    return fake


@pytest.fixture
def two(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeFleet:
    """coder and flash applied, then monitoring declared (nothing written yet)."""
    return monitored(applied(tmp_path, monkeypatch, ("coder", "flash")))


def seat_targets(fake: FakeFleet) -> dict[str, list[str]]:
    text = fake.hosts["gateway"].files[f"{FOLDER}/{targets.SEATS}"]
    return {g["labels"]["seat"]: g["targets"] for g in json.loads(text)}


def test_apply_writes_the_targets_and_plan_is_0_after(two: FakeFleet) -> None:
    plan = two.fleet("plan")
    assert plan.returncode == 2, plan.stdout
    assert "Wave 5: monitoring" in plan.stdout
    assert "~ seat coder: none -> 127.0.0.11:8030" in plan.stdout
    assert "targets-drift gateway:/etc/prometheus/fleet/fleet-seats.json" in plan.stdout
    applied = two.fleet("apply", "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "5 target files to write" in applied.stdout  # 3 target lists, configs, token
    gateway = two.hosts["gateway"]
    assert seat_targets(two) == {"coder": ["127.0.0.11:8030"], "flash": ["127.0.0.11:8026"]}
    assert (
        gateway.files[f"{FOLDER}/{targets.CREDENTIALS}"] == MASTER_KEY["LITELLM_MASTER_KEY"] + "\n"
    )
    assert gateway.modes[f"{FOLDER}/{targets.CREDENTIALS}"] == 0o640
    secret = MASTER_KEY["LITELLM_MASTER_KEY"]
    assert secret not in plan.stdout + applied.stdout + applied.stderr
    again = two.fleet("plan")
    assert again.returncode == 0, again.stdout


def test_a_surge_moves_its_target_in_the_same_apply(two: FakeFleet) -> None:
    assert two.fleet("apply", "--auto-approve").returncode == 0
    two.edit("seats/coder.yaml", "context: 2048", "context: 4096")
    plan = two.fleet("plan")
    assert "~ seat coder: 127.0.0.11:8030 -> 127.0.0.11:9030" in plan.stdout, plan.stdout
    result = two.fleet("apply", "--auto-approve")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "surge seat coder" in result.stdout
    assert seat_targets(two)["coder"] == ["127.0.0.11:9030"]
    assert two.fleet("plan").returncode == 0


def test_a_pruned_seat_loses_its_target_in_the_same_apply(two: FakeFleet) -> None:
    assert two.fleet("apply", "--auto-approve").returncode == 0
    (two.desired / "seats" / "flash.yaml").unlink()
    yaml = YAML()
    gateway = yaml.load(two.desired / "gateway.yaml")
    del gateway["alias_params"]  # it named only flash's summarizer
    yaml.dump(gateway, two.desired / "gateway.yaml")
    two.commit("flash goes")
    plan = two.fleet("plan", "--prune")
    assert "~ seat flash: 127.0.0.11:8026 -> none" in plan.stdout, plan.stdout
    result = two.fleet("apply", "--auto-approve", "--prune")
    assert result.returncode == 0, result.stdout + result.stderr
    assert seat_targets(two) == {"coder": ["127.0.0.11:8030"]}


def test_a_file_edited_by_hand_is_a_finding_and_is_written_back(two: FakeFleet) -> None:
    assert two.fleet("apply", "--auto-approve").returncode == 0
    path = f"{FOLDER}/{targets.EXPORTERS}"
    two.hosts["gateway"].files[path] = "[]\n"
    plan = two.fleet("plan")
    assert plan.returncode == 2
    assert f"warning targets-drift gateway:{path}: Prometheus's target file differs" in plan.stdout
    assert "~ exporter tower/node: none -> 127.0.0.11:9100" in plan.stdout
    assert two.fleet("apply", "--auto-approve").returncode == 0
    assert "127.0.0.11:9100" in two.hosts["gateway"].files[path]


def test_an_unset_credentials_variable_stops_apply_before_anything_changes(
    two: FakeFleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet_yaml = two.desired / "fleet.yaml"
    fleet_yaml.write_text(fleet_yaml.read_text() + "  gateway_credentials: ${PROMETHEUS_TOKEN}\n")
    two.commit("a token of its own")
    monkeypatch.delenv("PROMETHEUS_TOKEN", raising=False)
    result = two.fleet("apply", "--auto-approve")
    assert result.returncode == 1
    assert "PROMETHEUS_TOKEN (the gateway's scrape credentials) is not set" in result.stderr
    assert not [p for p in two.hosts["gateway"].files if p.startswith(FOLDER)]
    monkeypatch.setenv("PROMETHEUS_TOKEN", "prometheus-scrape-token")
    assert two.fleet("apply", "--auto-approve").returncode == 0
    token = two.hosts["gateway"].files[f"{FOLDER}/{targets.CREDENTIALS}"]
    assert token == "prometheus-scrape-token\n"
