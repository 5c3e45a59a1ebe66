"""`fleet apply` against the lab where it must not go through: an engine, a missing KV flag
or a gateway that fails rolls back; a stale saved plan is refused (a fresh one applies); a
lock another apply holds refuses, naming who, until `fleet unlock --force`; without a
terminal it asks for --auto-approve."""

from __future__ import annotations

import git
import pytest

from fleet.observed.gateway_config import parse_gateway_config
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
    log = git.Repo(one.root).head.commit.message
    assert log.startswith("edit seats/flash.yaml"), "no commit after a failed apply"


def test_kv_flag_missing_from_the_running_argv_rolls_back(one: FleetRepo) -> None:
    """A seat whose engine silently runs without its KV byte budget is not accepted."""
    apply(one)
    before = argv_of(one.lab, "tower", "flash")
    one.edit(
        "seats/flash.yaml",
        "port: 8026",
        "port: 8026\nenv: {FLEET_LAB_DROP_ARG: --kv-cache-memory-bytes}",
    )
    result = one.fleet("apply", "--auto-approve", "--timeout", "60")
    assert result.returncode == 1
    assert (
        "rolled back: seat flash on tower: running argv does not carry what the spec "
        "implies: kv_cache_bytes"
    ) in result.stderr
    assert argv_of(one.lab, "tower", "flash") == before
    assert chat(one.lab, "flash")[0] == 200


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


def test_stale_saved_plan_is_refused(one: FleetRepo) -> None:
    saved = one.root / "plan.json"
    assert one.fleet("plan", "--out", str(saved)).returncode == 2
    one.deploy("tower")
    result = one.fleet("apply", str(saved), "--auto-approve")
    assert result.returncode == 1
    assert "the live fleet moved since the plan was made: " in result.stderr
    assert "host/tower/seat/flash: absent -> " in result.stderr


def test_saved_plan_applies_when_nothing_moved(one: FleetRepo) -> None:
    saved = one.root / "plan.json"
    assert one.fleet("plan", "--out", str(saved)).returncode == 2
    result = one.fleet("apply", str(saved), "--auto-approve", "--timeout", "120")
    assert result.returncode == 0, result.stdout + result.stderr
    assert one.fleet("plan").returncode == 0


def test_lock_contention_and_unlock(one: FleetRepo) -> None:
    one.lab.run(
        "tower",
        "mkdir -p /srv/fleet && echo 'ops@laptop pid 42 `fleet apply` since "
        "2026-12-02T10:00:00Z' > /srv/fleet/.fleet.lock",
        check=True,
    )
    locked = one.fleet("apply", "--auto-approve")
    assert locked.returncode == 1
    assert "tower is locked by ops@laptop pid 42 `fleet apply`" in locked.stderr
    refused = one.fleet("unlock", "tower")
    assert refused.returncode == 1 and "--force" in refused.stderr
    assert one.fleet("unlock", "tower", "--force").returncode == 0
    apply(one)


def test_apply_refuses_without_a_terminal(one: FleetRepo) -> None:
    result = one.fleet("apply")
    assert result.returncode == 1
    assert "pass --auto-approve" in result.stderr
