"""`fleet plan` on fake hosts: a field change shown field by field (exit 2), a blocker and
an unreachable host (exit 1), a flag the image predates, and the JSON, Markdown and saved
forms.

The decisions themselves are tested in tests/unit/plan/test_plan.py; these check what the
command line makes of them (exit codes, the lines printed), through the same command line
as on a real fleet with its sessions handed to fake hosts. tests/integration/test_plan_lab.py
keeps what needs the lab's real containers and proxy.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.cli.fake_fleet import FakeFleet, make_fleet


@pytest.fixture
def repo(tmp_path: Path) -> FakeFleet:
    """The small example fleet (coder, embed, reason on tower; llama8b on rig), nothing
    running yet."""
    return make_fleet(tmp_path)


def test_field_changes_are_shown(repo: FakeFleet) -> None:
    repo.deploy("tower")
    repo.edit("seats/reason.yaml", "context: 40960", "context: 36864")  # 2.44x: in band
    result = repo.fleet("plan", "--seat", "reason")
    assert result.returncode == 2
    assert "~ seat reason on tower" in result.stdout
    assert "~ context: 40960 -> 36864" in result.stdout


def test_blocker_and_unreachable_host_are_exit_1(repo: FakeFleet) -> None:
    repo.edit("seats/llama8b.yaml", "/models/Llama-3.1-8B-Instruct", "/models/Llama-9B")
    repo.hosts["rig"].missing.add("/models/Llama-9B")
    blocked = repo.fleet("plan")
    assert blocked.returncode == 1
    assert "! llama8b: model directory /models/Llama-9B does not exist on rig" in blocked.stdout
    repo.unreachable["rig"] = "cannot reach root@127.0.0.12:2299: connection refused"
    unreachable = repo.fleet("plan")
    assert unreachable.returncode == 1
    assert "error: rig: cannot reach root@127.0.0.12:2299" in unreachable.stderr
    assert "+ seat coder on tower" in unreachable.stdout, "the other hosts are still planned"


def test_too_old_image_for_a_flag_blocks(repo: FakeFleet) -> None:
    repo.edit("seats/coder.yaml", ":v0.18.0", ":v0.9.2")
    repo.edit("seats/coder.yaml", "gpu_memory_utilization: 0.02", "kv_cache_bytes: 512MiB")
    result = repo.fleet("plan")
    assert result.returncode == 1
    assert "--kv-cache-memory-bytes needs vLLM >= 0.11.0" in result.stdout


def test_json_markdown_and_saved_plan(repo: FakeFleet) -> None:
    data = json.loads(repo.fleet("plan", "--json").stdout)
    kinds = [(a["kind"], a["target"]) for a in data["actions"]]
    assert ("create-seat", "coder") in kinds and ("restart-gateway", "gateway") in kinds
    assert data["actions"][-1]["wave"] == 2
    assert data["fingerprint"]["host/tower/seat/coder"] == "absent"
    markdown = repo.fleet("plan", "--markdown").stdout
    assert markdown.startswith("## fleet plan") and "| + | create-seat | `coder` |" in markdown
    saved = repo.root / "plan.json"
    result = repo.fleet("plan", "--out", str(saved))
    assert result.returncode == 2 and json.loads(saved.read_text())["format"] == "fleet-plan/1"
