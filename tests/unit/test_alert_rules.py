"""The Prometheus alert rules shipped in deploy/: valid for promtool, and they fire on the
series the reconciler exports, as their unit tests (fleet-rules.test.yml) say."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

RULES = Path(__file__).resolve().parents[2] / "deploy" / "prometheus"


@pytest.fixture(scope="module")
def promtool() -> str:
    found = shutil.which("promtool")
    assert found, "promtool not found: Debian's prometheus package (tests/lab/install.sh) has it"
    return found


@pytest.mark.parametrize(
    ("command", "file", "said"),
    [
        ("check", "fleet-rules.yml", "SUCCESS: 12 rules found"),
        ("test", "fleet-rules.test.yml", "SUCCESS"),
    ],
    ids=["check-rules", "test-rules"],
)
def test_promtool(promtool: str, command: str, file: str, said: str) -> None:
    result = subprocess.run(
        [promtool, command, "rules", file], cwd=RULES, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert said in result.stdout + result.stderr


def test_every_rule_names_an_exported_metric() -> None:
    text = (RULES / "fleet-rules.yml").read_text()
    exported = (Path(__file__).resolve().parents[2] / "reconciler/adapters/metrics.py").read_text()
    for name in (
        "fleet_drift",
        "fleet_alias_up",
        "fleet_seat_up",
        "fleet_seat_concurrency_ratio",
        "fleet_bench_baseline_ratio",
        "fleet_reconcile_last_success_timestamp_seconds",
        "fleet_host_up",
    ):
        assert name in text and f'"{name}"' in exported
    assert "fleet_apply_total" in text and '"fleet_apply"' in exported  # a Counter: + _total


def test_every_alert_has_its_promtool_test_that_it_fires() -> None:
    rules = yaml.safe_load((RULES / "fleet-rules.yml").read_text())
    alerts = {rule["alert"] for group in rules["groups"] for rule in group["rules"]}
    tests = yaml.safe_load((RULES / "fleet-rules.test.yml").read_text())["tests"]
    firing = {
        case["alertname"]
        for test in tests
        for case in test["alert_rule_test"]
        if case["exp_alerts"]
    }
    assert alerts == firing
