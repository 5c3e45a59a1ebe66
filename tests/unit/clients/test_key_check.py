"""The gateway's key check: the key file fleet renders, and the shipped `fleet_auth`
module's decisions on it (401 unknown key, 403 alias or route not allowed, the master key
passes), its re-reading of a replaced file, and its bounds on a hostile one."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fleet.facts.client_keys import KeyedClient, KeyFile, hash_key, parse_key_file
from fleet.gateways.keyfile import render_key_file
from tests.fakes.keys import shipped_auth

KEY_A, KEY_B, MASTER = "sk-fleet-" + "a" * 43, "sk-fleet-" + "b" * 43, "sk-master-0123456789"


AUTH = shipped_auth()


def key_file(**clients: tuple[tuple[str, ...], tuple[str, ...]]) -> str:
    keys = KeyFile(
        clients={
            name: KeyedClient(aliases=aliases, hashes=tuple(hash_key(k) for k in keys), rpm=60)
            for name, (aliases, keys) in clients.items()
        }
    )
    return render_key_file(keys)


@pytest.fixture
def table(tmp_path: Path) -> object:
    path = tmp_path / "fleet_keys.json"
    path.write_text(key_file(tanko=(("chat", "coder"), (KEY_A,)), agent=(("*",), (KEY_B,))))
    return AUTH.KeyTable(str(path))


DECISIONS = [
    ("allowed-alias", KEY_A, "/v1/chat/completions", "coder", "tanko"),
    ("bearer-prefix", f"Bearer {KEY_A}", "/chat/completions", "chat", "tanko"),
    ("all-aliases", KEY_B, "/v1/embeddings", "anything", "agent"),
    ("model-list", KEY_A, "/v1/models", None, "tanko"),
    ("master", MASTER, "/model/info", None, None),
    ("forbidden-alias", KEY_A, "/v1/chat/completions", "sec", 403),
    ("no-model", KEY_A, "/v1/chat/completions", None, 403),
    ("admin-route", KEY_B, "/key/generate", None, 403),
    ("unknown-key", "sk-fleet-" + "c" * 43, "/v1/chat/completions", "chat", 401),
    ("no-key", "", "/v1/models", None, 401),
    ("hash-as-key", hash_key(KEY_A), "/v1/models", None, 401),
]


@pytest.mark.parametrize(
    ("key", "route", "model", "expected"), [c[1:] for c in DECISIONS], ids=[c[0] for c in DECISIONS]
)
def test_decisions(
    table: object, key: str, route: str, model: str | None, expected: object
) -> None:
    if isinstance(expected, int):
        with pytest.raises(AUTH.Refused) as refused:
            AUTH.decide(table, key, MASTER, route, model)
        assert refused.value.status == expected
        assert KEY_A not in refused.value.message
    else:
        found = AUTH.decide(table, key, MASTER, route, model)
        assert (found and found["client"]) == expected


def test_a_replaced_key_file_is_read_again_without_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "fleet_keys.json"
    path.write_text(key_file(tanko=(("chat",), (KEY_A,))))
    table = AUTH.KeyTable(str(path))
    assert AUTH.decide(table, KEY_A, MASTER, "/v1/models", None)["client"] == "tanko"
    new = tmp_path / "new.json"  # as apply writes it: a new file renamed over the old
    new.write_text(key_file(tanko=(("chat",), (KEY_B,))))
    os.replace(new, path)
    with pytest.raises(AUTH.Refused):
        AUTH.decide(table, KEY_A, MASTER, "/v1/models", None)
    assert AUTH.decide(table, KEY_B, MASTER, "/v1/models", None)["client"] == "tanko"


HOSTILE = [
    ("not-json", "{"),
    ("deep", "[" * 100000),
    ("wrong-version", json.dumps({"fleet_keys": 2, "clients": {}})),
    ("list", "[]"),
    ("bad-hash", json.dumps({"fleet_keys": 1, "clients": {"a": {"aliases": [], "hashes": ["x"]}}})),
    (
        "bad-name",
        json.dumps({"fleet_keys": 1, "clients": {"a b": {"aliases": ["c"], "hashes": []}}}),
    ),
    ("too-large", " " * (5 * 1024 * 1024)),
]


@pytest.mark.parametrize("text", [c[1] for c in HOSTILE], ids=[c[0] for c in HOSTILE])
def test_a_hostile_key_file_refuses_every_client_but_not_the_master(
    tmp_path: Path, text: str
) -> None:
    path = tmp_path / "fleet_keys.json"
    path.write_text(text)
    table = AUTH.KeyTable(str(path))
    with pytest.raises(AUTH.Refused):
        AUTH.decide(table, KEY_A, MASTER, "/v1/models", None)
    assert AUTH.decide(table, MASTER, MASTER, "/v1/models", None) is None
    assert isinstance(parse_key_file(text), str)


def test_the_rendered_file_reads_back_the_same_in_fleet_and_at_the_gateway(tmp_path: Path) -> None:
    text = key_file(tanko=(("chat", "coder"), (KEY_A, KEY_B)))
    parsed = parse_key_file(text)
    assert isinstance(parsed, KeyFile)
    assert parsed.clients["tanko"].hashes == (hash_key(KEY_A), hash_key(KEY_B))
    table = AUTH.parse(text)
    assert set(table) == {hash_key(KEY_A), hash_key(KEY_B)}
    assert KEY_A not in text and KEY_B not in text
    assert render_key_file(parsed) == text
