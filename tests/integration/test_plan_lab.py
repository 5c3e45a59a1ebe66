"""`fleet plan` against the lab: each exit status, the JSON, Markdown and saved forms."""

from __future__ import annotations

import json

import pytest

from tests.integration.helpers import FleetRepo

pytestmark = pytest.mark.lab


def test_empty_lab_plans_creates_and_gateway_changes(repo: FleetRepo) -> None:
    result = repo.fleet("plan")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Plan: 4 to create, 0 to replace, 0 to remove," in result.stdout
    assert "+ seat reason on tower" in result.stdout
    assert "- alias sec-old" in result.stdout and "retired in desired/" in result.stdout
    assert "dead-alias alias code-legacy" in result.stdout


def test_json_markdown_and_saved_plan(repo: FleetRepo) -> None:
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


def test_in_sync_is_exit_0(repo: FleetRepo) -> None:
    repo.deploy("tower")
    repo.deploy("rig")
    rendered = repo.fleet("render", "gateway")
    assert rendered.returncode == 0, rendered.stderr
    repo.lab.set_gateway_config(rendered.stdout)
    assert repo.lab.restart_gateway().returncode == 0
    result = repo.fleet("plan")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Plan: 0 to create, 0 to replace, 0 to remove, 0 alias changes" in result.stdout
    assert "= coder: in sync" in result.stdout


def test_field_changes_are_shown(repo: FleetRepo) -> None:
    repo.deploy("tower")
    repo.edit("seats/reason.yaml", "context: 40960", "context: 36864")  # 2.44x: in band
    result = repo.fleet("plan", "--seat", "reason")
    assert result.returncode == 2
    assert "~ seat reason on tower" in result.stdout
    assert "~ context: 40960 -> 36864" in result.stdout


def test_blocker_and_unreachable_host_are_exit_1(repo: FleetRepo) -> None:
    repo.edit("seats/llama8b.yaml", "/models/Llama-3.1-8B-Instruct", "/models/Llama-9B")
    blocked = repo.fleet("plan")
    assert blocked.returncode == 1
    assert "! llama8b: model directory /models/Llama-9B does not exist on rig" in blocked.stdout
    rig = repo.lab.address_of("rig")
    repo.edit("hosts/rig.yaml", "alias: rig", f"address: {rig}\n  port: 2299")
    unreachable = repo.fleet("plan")
    assert unreachable.returncode == 1
    assert "error: rig: cannot reach" in unreachable.stderr


def test_too_old_image_for_a_flag_blocks(repo: FleetRepo) -> None:
    repo.edit("seats/coder.yaml", ":v0.18.0", ":v0.9.2")
    repo.edit("seats/coder.yaml", "gpu_memory_utilization: 0.02", "kv_cache_bytes: 512MiB")
    result = repo.fleet("plan")
    assert result.returncode == 1
    assert "--kv-cache-memory-bytes needs vLLM >= 0.11.0" in result.stdout
