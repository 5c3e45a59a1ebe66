"""The Grafana dashboard in deploy/grafana/: the committed files are what the generator
makes, and promtool parses every panel's query (the lab's Prometheus answers each:
tests/integration/test_gateway_bluegreen_lab.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from tests.dashboard import load_generator


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    return load_generator()


def test_the_committed_files_are_what_the_generator_makes(generator: ModuleType) -> None:
    assert generator.DASHBOARD.read_text() == generator.dashboard_json()
    assert generator.PROVISIONING.read_text() == generator.provisioning_yaml()
    assert generator.main(["--check"]) == 0


def test_every_panel_has_its_queries_and_a_place(generator: ModuleType) -> None:
    board = json.loads(generator.DASHBOARD.read_text())
    panels = [p for p in board["panels"] if p["type"] != "row"]
    titles = {p["title"] for p in panels}
    for wanted in (
        "Seats running",
        "GPU memory per GPU",
        "Decode tokens/s per seat, against its baseline",
        "Running and waiting requests",
        "KV cache use",
        "Speculative decoding: accepted / drafted tokens",
        "Gateway requests per alias",
        "Gateway errors per alias",
        "Applies by result",
        "Pending changes by kind",
    ):
        assert wanted in titles
    exprs = [(p["title"], t["expr"]) for p in panels for t in p["targets"]]
    assert exprs == generator.queries()
    assert len({p["id"] for p in board["panels"]}) == len(board["panels"])
    assert all(p["gridPos"]["x"] + p["gridPos"]["w"] <= 24 for p in board["panels"])
    provider = yaml.safe_load(generator.PROVISIONING.read_text())
    assert provider["apiVersion"] == 1 and provider["providers"][0]["type"] == "file"


def test_promtool_parses_every_panel_query(generator: ModuleType, tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    assert promtool, "promtool not found: Debian's prometheus package (tests/lab/install.sh)"
    rules = [
        {"record": f"fleet_dashboard:query_{i}", "expr": query}
        for i, (_, query) in enumerate(generator.queries())
    ]
    path = tmp_path / "queries.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    result = subprocess.run(
        [promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(rules)} rules found" in result.stdout + result.stderr


def test_promtool_refuses_a_query_that_does_not_parse(tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    assert promtool
    path = tmp_path / "bad.yml"
    bad = {"record": "fleet_dashboard:bad", "expr": "sum by (seat (up)"}
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": [bad]}]}))
    result = subprocess.run(
        [promtool, "check", "rules", str(path)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode != 0
