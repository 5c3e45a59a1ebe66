"""`fleet apply` against the lab where it must not go through, and what it takes real
parts to prove: an engine that crashes in its real container rolls back and the previous
one serves again; a proxy that refuses its config gets the previous one back; a saved
plan applies when nothing moved.

The guards that need no real part run on fake hosts through the same command line
(tests/unit/cli/test_apply_cli.py): lock contention and `fleet unlock`, refusing without a
terminal, a running argv without its KV flag, a stale saved plan."""

from __future__ import annotations

import pytest

from fleet.gateways.litellm.config import parse_gateway_config
from tests.gitlog import last_commit
from tests.integration.helpers import FleetRepo, apply, argv_of, chat, drop_front

pytestmark = pytest.mark.lab


def test_engine_that_fails_rolls_back(one: FleetRepo) -> None:
    apply(one)
    config_before = one.lab.gateway_config()
    argv_before = argv_of(one.lab, "tower", "flash")
    one.edit("seats/flash.yaml", "port: 8026", "port: 8026\nenv: {FLEET_LAB_FAIL: crash}")
    result = one.fleet("apply", "--auto-approve", "--timeout", "60")
    assert result.returncode == 1
    assert "rolled back: " in result.stderr
    assert "Traceback" not in result.stderr
    assert argv_of(one.lab, "tower", "flash") == argv_before
    assert chat(one.lab, "flash")[0] == 200, "the previous seat serves again"
    assert one.lab.gateway_config() == config_before, "aliases unchanged"
    log = last_commit(one.root).message
    assert log.startswith("edit seats/flash.yaml"), "no commit after a failed apply"


def test_gateway_that_fails_to_restart_restores_its_config(one: FleetRepo) -> None:
    drop_front(one)  # the in-place restart (a front changes the proxy blue/green)
    apply(one)
    before = one.lab.gateway_config()
    # A restart that refuses configs routing `canary`, as a broken proxy config would be.
    one.edit(
        "gateway.yaml",
        "command: fleet-gateway-restart",
        "command: \"if grep -q 'model_name: canary' /etc/litellm/config.yaml; then echo "
        "'litellm: config rejected' >&2; exit 1; fi; fleet-gateway-restart\"",
    )
    apply(one)
    one.edit(
        "seats/flash.yaml", "aliases: [flash, summarizer]", "aliases: [flash, summarizer, canary]"
    )
    result = one.fleet("apply", "--auto-approve", "--timeout", "60")
    assert result.returncode == 1
    assert "rolled back: gateway restart" in result.stderr and "config rejected" in result.stderr
    assert "canary" not in one.lab.gateway_config()
    assert (
        parse_gateway_config(one.lab.gateway_config()).by_alias().keys()
        == parse_gateway_config(before).by_alias().keys()
    )
    assert chat(one.lab, "summarizer")[0] == 200


def test_saved_plan_applies_when_nothing_moved(one: FleetRepo) -> None:
    saved = one.root / "plan.json"
    assert one.fleet("plan", "--out", str(saved)).returncode == 2
    result = one.fleet("apply", str(saved), "--auto-approve", "--timeout", "120")
    assert result.returncode == 0, result.stdout + result.stderr
    assert one.fleet("plan").returncode == 0
