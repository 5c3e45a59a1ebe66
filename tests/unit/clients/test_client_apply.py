"""Clients on fake hosts, through the real command line: plan shows each key's change and
never a key; apply issues, delivers and verifies through the front from the client's host;
a key changed by hand is drift; a client gone from desired/ is revoked; a verification
that fails puts everything back."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fleet.facts.client_keys import KeyFile, env_value, hash_key, parse_key_file
from tests.fakes.keys import FakeClientHost, guard_front
from tests.unit.cli.fake_fleet import GATEWAY_CONFIG, MASTER_KEY, FakeFleet, make_fleet

KEY_FILE = "/etc/litellm/fleet_keys.json"
MODULE = "/etc/litellm/fleet_auth.py"
CLIENTS = """clients:
  tanko:
    aliases: [coder, chat]
    rpm: 60
    delivery: {host: agent-box}
  ci:
    aliases: all
    delivery: {host: ci-box, file: /etc/ci/ci.env, variable: CI_LLM_KEY}
  phone:
    aliases: [chat]
    delivery: manual
"""
ISSUED = re.compile(r"sk-fleet-[A-Za-z0-9_-]{43}")


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeFleet:
    for name, value in MASTER_KEY.items():
        monkeypatch.setenv(name, value)
    fleet = make_fleet(tmp_path)
    assert fleet.front is not None
    front = (fleet.front.address, fleet.front.front_port)
    for name in ("agent-box", "ci-box"):
        fleet.hosts[name] = FakeClientHost(
            name, fleet.hosts["gateway"], front, KEY_FILE, MASTER_KEY["LITELLM_MASTER_KEY"]
        )
    guard_front(
        fleet.hosts["gateway"],
        FakeClientHost(
            "gateway-view",
            fleet.hosts["gateway"],
            front,
            KEY_FILE,
            MASTER_KEY["LITELLM_MASTER_KEY"],
        ),
    )
    fleet.hosts["ci-box"].files["/etc/ci/ci.env"] = "CI_RUNNER=1\n"
    fleet.hosts["ci-box"].modes["/etc/ci/ci.env"] = 0o640
    path = fleet.desired / "gateway.yaml"
    path.write_text(path.read_text() + CLIENTS)
    fleet.commit("clients")
    return fleet


def key_file(fake: FakeFleet) -> KeyFile:
    parsed = parse_key_file(fake.hosts["gateway"].files[KEY_FILE])
    assert isinstance(parsed, KeyFile)
    return parsed


def delivered(fake: FakeFleet, host: str, path: str, variable: str) -> str:
    value = env_value(fake.hosts[host].files[path], variable)
    assert value is not None and ISSUED.fullmatch(value)
    return value


def apply(fake: FakeFleet) -> str:
    result = fake.fleet("apply", "--auto-approve", "--timeout", "120")
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


def test_plan_names_each_client_and_where_its_key_goes(fake: FakeFleet) -> None:
    text = fake.fleet("plan").stdout
    assert (
        "+ client tanko: key for chat, coder -> agent-box:/etc/environment LITELLM_API_KEY" in text
    )
    assert "+ client ci: key for every alias -> ci-box:/etc/ci/ci.env CI_LLM_KEY" in text
    assert "+ client phone: key for chat -> manual" in text
    plan = json.loads(fake.fleet("plan", "--json").stdout)
    kinds = {(a["kind"], a["target"]) for a in plan["actions"] if a["kind"].endswith("-client")}
    assert kinds == {("add-client", "tanko"), ("add-client", "ci"), ("add-client", "phone")}


def test_apply_delivers_verified_keys_and_a_hand_changed_key_is_drift(fake: FakeFleet) -> None:
    out = apply(fake)
    tanko = delivered(fake, "agent-box", "/etc/environment", "LITELLM_API_KEY")
    ci = delivered(fake, "ci-box", "/etc/ci/ci.env", "CI_LLM_KEY")
    keys = key_file(fake)
    assert keys.clients["tanko"].hashes == (hash_key(tanko),)
    assert keys.clients["tanko"].aliases == ("chat", "coder") and keys.clients["tanko"].rpm == 60
    assert keys.clients["ci"].aliases == ("*",) and "phone" not in keys.clients
    assert fake.hosts["agent-box"].modes["/etc/environment"] == 0o600, "a new file: 0600"
    assert fake.hosts["ci-box"].modes["/etc/ci/ci.env"] == 0o640, "an existing file keeps its mode"
    assert fake.hosts["ci-box"].files["/etc/ci/ci.env"].startswith("CI_RUNNER=1\n")
    assert (
        "custom_auth: fleet_auth.user_api_key_auth" in fake.hosts["gateway"].files[GATEWAY_CONFIG]
    )
    assert "def user_api_key_auth" in fake.hosts["gateway"].files[MODULE]
    assert fake.hosts["agent-box"].answers == [200, 403, 401], "allowed, other alias, wrong key"
    assert "fleet keys rotate phone" in out, "a manual key is never issued without a terminal"
    assert tanko not in out and ci not in out
    inventory = fake.fleet("inventory").stdout
    assert (
        "| `tanko` | chat, coder | 1 | " in inventory
        and "| agent-box:/etc/environment LITELLM_API_KEY | matches |" in inventory
    )
    assert tanko not in inventory and hash_key(tanko) not in inventory
    again = json.loads(fake.fleet("plan", "--json").stdout)
    left = [a for a in again["actions"] if a["kind"].endswith("-client")]
    assert [(a["kind"], a["target"]) for a in left] == [("add-client", "phone")]

    fake.hosts["agent-box"].files["/etc/environment"] = "LITELLM_API_KEY=sk-typed-by-hand-0000\n"
    check = fake.fleet("check")
    assert check.returncode == 2
    plan = fake.fleet("plan")
    assert (
        "~ client tanko: the key at agent-box:/etc/environment LITELLM_API_KEY is not one the "
        "gateway holds: a new key" in plan.stdout
    )
    apply(fake)
    fresh = delivered(fake, "agent-box", "/etc/environment", "LITELLM_API_KEY")
    assert key_file(fake).clients["tanko"].hashes == (hash_key(fresh),), "the old hash went"


def test_status_shows_each_client_where_its_key_lives_and_whether_it_matches(
    fake: FakeFleet,
) -> None:
    before = json.loads(fake.fleet("status", "--json").stdout)["clients"]
    assert [(c["name"], c["where"], c["keys"]) for c in before] == [
        ("ci", "ci-box:/etc/ci/ci.env CI_LLM_KEY", 0),
        ("phone", "manual", 0),
        ("tanko", "agent-box:/etc/environment LITELLM_API_KEY", 0),
    ]
    apply(fake)
    tanko = delivered(fake, "agent-box", "/etc/environment", "LITELLM_API_KEY")
    fake.hosts["agent-box"].files["/etc/environment"] = "LITELLM_API_KEY=sk-typed-by-hand-0000\n"
    result = fake.fleet("status")
    assert (
        "tanko: chat, coder (key at agent-box:/etc/environment LITELLM_API_KEY: differs, "
        "1 at the gateway)" in result.stdout
    ), result.stdout
    assert "ci: every alias (key at ci-box:/etc/ci/ci.env CI_LLM_KEY: matches" in result.stdout
    assert "phone: chat (key at manual: manual" in result.stdout
    clients = {c["name"]: c for c in json.loads(fake.fleet("status", "--json").stdout)["clients"]}
    assert clients["tanko"]["delivered"] == "differs" and clients["ci"]["delivered"] == "matches"
    assert tanko not in result.stdout and hash_key(tanko) not in result.stdout


def test_a_client_gone_from_desired_is_revoked(fake: FakeFleet) -> None:
    apply(fake)
    text = (fake.desired / "gateway.yaml").read_text()
    fake.edit("gateway.yaml", text[text.index("  ci:") : text.index("  phone:")], "")
    assert (
        "- client ci: not in desired/: its key is refused from now on" in fake.fleet("plan").stdout
    )
    apply(fake)
    assert set(key_file(fake).clients) == {"tanko"}


def test_a_key_that_fails_verification_is_taken_back(fake: FakeFleet) -> None:
    fake.hosts["agent-box"].checks_keys = False  # a proxy that lets every key through
    result = fake.fleet("apply", "--auto-approve", "--timeout", "5")
    assert result.returncode == 1
    assert "client" in result.stderr and "wanted HTTP 403" in result.stderr
    assert "LITELLM_API_KEY" not in fake.hosts["agent-box"].files.get("/etc/environment", "")
    assert "tanko" not in key_file(fake).clients
