"""`fleet plan` against the lab: what the real hosts and proxy give it. An empty lab plans
creates, the proxy's dead aliases and retirements (probed over real TCP from the gateway
host); seats started by real compose from fleet's own rendering, behind the rendered
gateway config, are in sync (exit 0).

Field changes, blockers, an unreachable host, a flag the image predates and the JSON,
Markdown and saved forms need no real part: tests/unit/cli/test_plan_cli.py runs them on
fake hosts through the same command line."""

from __future__ import annotations

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
