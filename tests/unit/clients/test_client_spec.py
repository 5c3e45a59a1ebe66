"""gateway.yaml's `clients:`: what validate accepts and what it refuses, at file:line."""

from __future__ import annotations

import pytest

from fleet.runtimes import validate_fleet
from fleet.spec.clients import GatewayClient
from fleet.spec.load import load_fleet
from tests.unit.spec.test_validate import example_files

GOOD = """clients:
  tanko:
    aliases: [coder, chat]
    rpm: 60
    tpm: 100000
    delivery: {host: tower, file: /etc/environment, variable: LITELLM_API_KEY}
    rotate_every: 30d
  agent:
    aliases: all
    delivery: {host: agent-box.lan, file: /etc/agent/agent.env}
  phone:
    aliases: [chat]
    delivery: manual
"""


def problems(clients: str) -> list[str]:
    files = example_files()
    files["gateway.yaml"] += clients
    return [str(p) for p in validate_fleet(load_fleet(files))]


def test_clients_of_every_delivery_are_valid() -> None:
    files = example_files()
    files["gateway.yaml"] += GOOD
    loaded = load_fleet(files)
    assert [str(p) for p in validate_fleet(loaded)] == []
    assert loaded.fleet is not None and loaded.fleet.gateway is not None
    clients = loaded.fleet.gateway.clients
    assert clients["tanko"].where() == "tower:/etc/environment LITELLM_API_KEY"
    assert clients["tanko"].rotate_every == 30 * 86400
    assert clients["agent"].allowed() == ("*",)
    assert clients["agent"].where() == "agent-box.lan:/etc/agent/agent.env LITELLM_API_KEY"
    assert clients["phone"].manual and clients["phone"].where() == "manual"


def client(body: str, name: str = "tanko") -> str:
    return f"clients:\n  {name}:\n" + "".join(f"    {line}\n" for line in body.splitlines())


CASES = [
    (
        "unknown-alias",
        client("aliases: [coder, chatt]\ndelivery: manual"),
        "desired/gateway.yaml:23: error: client 'tanko' names alias 'chatt', which no seat routes",
    ),
    (
        "aliases-word",
        client("aliases: every\ndelivery: manual"),
        "desired/gateway.yaml:23: error: clients.tanko.aliases: a list of aliases, or 'all'",
    ),
    (
        "no-alias",
        client("aliases: []\ndelivery: manual"),
        "error: client 'tanko' may call no alias",
    ),
    (
        "unknown-key",
        client("aliases: all\ndelivery: manual\napi_key: abc"),
        "desired/gateway.yaml:25: error: 'api_key' holds a literal value",
    ),
    (
        "delivery-word",
        client("aliases: all\ndelivery: email"),
        "desired/gateway.yaml:24: error: clients.tanko.delivery: 'manual', or {host, file, "
        "variable}",
    ),
    (
        "relative-file",
        client("aliases: all\ndelivery:\n  host: tower\n  file: etc/environment"),
        "desired/gateway.yaml:26: error: delivery.file 'etc/environment' is not an absolute path",
    ),
    (
        "shell-in-host",
        client("aliases: all\ndelivery:\n  host: 'tower;id'"),
        "desired/gateway.yaml:25: error: delivery.host 'tower;id' is neither a host",
    ),
    (
        "bad-variable",
        client("aliases: all\ndelivery:\n  host: tower\n  variable: KEY=1"),
        "desired/gateway.yaml:26: error: delivery.variable 'KEY=1': letters",
    ),
    (
        "beside-gateway-config",
        client("aliases: all\ndelivery:\n  host: gateway\n  file: /etc/litellm/env"),
        "error: delivery.file '/etc/litellm/env' lies beside the gateway's config",
    ),
    (
        "bad-name",
        client("aliases: all\ndelivery: manual", name="'ta nko'"),
        "error: client name 'ta nko'",
    ),
    (
        "rotate-too-often",
        client("aliases: all\ndelivery: manual\nrotate_every: 5s"),
        "desired/gateway.yaml:25: error: clients.tanko.rotate_every: expected at least 60",
    ),
    (
        "literal-key-in-delivery",
        client("aliases: all\ndelivery: manual\n# sk-live0123456789abcdefghij"),
        "looks like an OpenAI-style API key",
    ),
]


@pytest.mark.parametrize(("clients", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_validate_refuses(clients: str, expected: str) -> None:
    found = problems(clients)
    assert any(expected in line for line in found), found


def test_two_clients_on_one_variable_are_refused() -> None:
    both = "\n".join(
        f"  {n}:\n    aliases: all\n    delivery: {{host: tower}}" for n in ("a1", "b2")
    )
    assert problems(f"clients:\n{both}\n") == [
        "desired/gateway.yaml:27: error: client 'b2' delivers to tower:/etc/environment "
        "LITELLM_API_KEY, as client 'a1' does: each would overwrite the other's key"
    ]


def test_a_client_holds_no_key_field() -> None:
    assert "key" not in GatewayClient.model_fields
