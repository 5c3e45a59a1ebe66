"""The names fleet writes on hosts and reads back: each exists here once.

Labels on the containers fleet creates, the lock and journal files in a host's compose
directory, the provenance file beside a model directory, and the id of a gateway entry
that fleet manages (`fleet:<seat>:<alias>`). Render writes them, observe and apply read
them; neither spells them on its own.
"""

from __future__ import annotations

import re

SEAT_LABEL = "fleet.seat"
HASH_LABEL = "fleet.spec-hash"
MANAGED_LABEL = "fleet.managed"

LOCK_NAME = ".fleet.lock"
JOURNAL_NAME = ".fleet-journal.jsonl"
COMPOSE_NAME = "compose.yaml"

PROVENANCE_SUFFIX = ".PROVENANCE.txt"

ENTRY_PREFIX = "fleet:"

COMPOSE_SERVICE_LABEL = "com.docker.compose.service"  # set by docker compose itself
COMPOSE_PROJECT_LABEL = "com.docker.compose.project"

# What a seat name read back from a host (a container's label, a unit's) must look like
# to be taken for a seat fleet manages: a compose service name's characters, nothing a
# shell or a unit file would read as structure.
SEAT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")


def is_seat_name(value: str) -> bool:
    """Whether a name read from a host has the shape of a seat name (`SEAT_NAME`)."""
    return SEAT_NAME.fullmatch(value) is not None


def in_compose_dir(compose_dir: str, name: str) -> str:
    """A file in a host's compose directory."""
    return f"{compose_dir.rstrip('/')}/{name}"


def lock_path(state_dir: str) -> str:
    """Where a host's apply lock lives, in its state directory (`Host.apply_state_dir`)."""
    return f"{state_dir.rstrip('/')}/{LOCK_NAME}"


def journal_path(state_dir: str) -> str:
    """Where a host's apply journal lives, in its state directory."""
    return f"{state_dir.rstrip('/')}/{JOURNAL_NAME}"


def entry_id(seat: str, alias: str) -> str:
    """The id fleet marks a gateway entry it manages with (each gateway kind keeps it where
    its config has room for an id)."""
    return f"{ENTRY_PREFIX}{seat}:{alias}"


def is_managed_entry(entry: str | None) -> bool:
    """True for the id of a gateway entry fleet manages."""
    return bool(entry and entry.startswith(ENTRY_PREFIX))


def entry_seat(entry: str | None) -> str | None:
    """The seat a managed entry's id names; None for a foreign entry."""
    return entry.split(":")[1] if entry and is_managed_entry(entry) else None


def hand_seat_name(raw: str) -> str:
    """The seat name of a container fleet did not create (its compose service or name),
    as `fleet import` writes it and plan matches it: lowercase letters, digits and `-`."""
    return re.sub(r"[^a-z0-9-]+", "-", raw.lower()).strip("-") or "seat"


# The gateway's key check, beside its config: fleet's key file (hashes only) and the
# LiteLLM custom_auth module that reads it, named in the config as CUSTOM_AUTH.
KEY_FILE_NAME = "fleet_keys.json"
AUTH_MODULE_NAME = "fleet_auth.py"
CUSTOM_AUTH = "fleet_auth.user_api_key_auth"


def beside(config_path: str, name: str) -> str:
    """A file in the directory of the gateway's config."""
    return config_path.rsplit("/", 1)[0] + "/" + name
