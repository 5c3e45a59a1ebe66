"""Reading what holds client keys: the gateway's key file, and a file a key was delivered to.

The key file (`fleet_keys.json` beside the gateway config, rendered by
`fleet.gateways.keyfile`) holds, per client, its aliases, limits, when its newest key was
issued and the SHA-256 of each of its keys: never a key. A delivered file is an
environment file (`/etc/environment`, a systemd `EnvironmentFile=`): `VARIABLE=value`
lines. Both come from a host, so both are parsed with bounds and shapes, and a delivered
key leaves this module only as its hash. Pure; total (an unreadable file is a message).
"""

from __future__ import annotations

import hashlib
import json
import re

from pydantic import Field, ValidationError

from fleet.base import CoreModel

MAX_BYTES = 4 * 1024 * 1024
MAX_CLIENTS = 10000
HASH = r"^sha256:[0-9a-f]{64}$"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=(.*)$")


class KeyedClient(CoreModel):
    """One client in the key file."""

    aliases: tuple[str, ...] = Field(description="the aliases it may call; ('*',) for all")
    rpm: int | None = None
    tpm: int | None = None
    hashes: tuple[str, ...] = Field(max_length=4, description="sha256 of each key it holds")
    issued: str | None = Field(None, description="when its newest key was issued (UTC)")


class KeyFile(CoreModel):
    """The gateway's key file: clients by name."""

    clients: dict[str, KeyedClient] = Field(default_factory=dict)


def hash_key(key: str) -> str:
    """`sha256:<hex>` of a key: what the key file and observations hold."""
    return "sha256:" + hashlib.sha256(key.encode("utf-8")).hexdigest()


def parse_key_file(text: str) -> KeyFile | str:
    """The key file, or why it is not one."""
    if len(text) > MAX_BYTES:
        return "the key file is larger than 4 MiB"
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return "the key file is not JSON"
    if not isinstance(data, dict) or data.get("fleet_keys") != 1:
        return "not a fleet key file (fleet_keys: 1)"
    clients = data.get("clients")
    if not isinstance(clients, dict) or len(clients) > MAX_CLIENTS:
        return "the key file's clients are not a mapping of at most 10000"
    try:
        found = KeyFile.model_validate({"clients": clients})
    except ValidationError as err:
        where = ".".join(str(p) for p in err.errors()[0]["loc"][:2])
        return f"the key file's {where} is malformed"
    for name, client in found.clients.items():
        if not _NAME.match(name) or not all(re.match(HASH, h) for h in client.hashes):
            return f"the key file's client {name[:64]!r} is malformed"
    return found


def delivered_hash(text: str, variable: str) -> str | None:
    """The hash of `variable`'s value in an environment file; None when it is not set
    (the last assignment wins, as a shell reading it would have it)."""
    value = env_value(text, variable)
    return hash_key(value) if value else None


def env_value(text: str, variable: str) -> str | None:
    """`variable`'s value in an environment file (quotes taken off), None if unset."""
    found = None
    for line in text[:MAX_BYTES].splitlines():
        match = _LINE.match(line)
        if match is None or match.group(1) != variable:
            continue
        value = match.group(2).strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        found = value
    return found
