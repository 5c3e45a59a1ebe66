"""Writing what holds client keys: the gateway's key file, and a client's environment file.

`render_key_file` writes the key file the gateway's `fleet_auth` module reads (format:
`fleet.facts.client_keys`): sorted, so it diffs cleanly; `client_entry` is a client of
desired/ with the hashes it holds. `with_variable` sets `VARIABLE=key` in an environment
file, every other line kept. Pure: the key itself is generated and carried by apply
(`reconciler.workflows.clients`) and passes through here only on its way to its file.
"""

from __future__ import annotations

import json

from fleet.facts.client_keys import KeyedClient, KeyFile
from fleet.spec.clients import GatewayClient


def render_key_file(keys: KeyFile) -> str:
    """The key file's text."""
    clients = {name: keys.clients[name].model_dump(mode="json") for name in sorted(keys.clients)}
    return json.dumps({"fleet_keys": 1, "clients": clients}, indent=1, sort_keys=True) + "\n"


def client_entry(client: GatewayClient, hashes: tuple[str, ...], issued: str | None) -> KeyedClient:
    """A client of desired/ as the key file holds it."""
    return KeyedClient(
        aliases=client.allowed(), rpm=client.rpm, tpm=client.tpm, hashes=hashes, issued=issued
    )


def with_client(keys: KeyFile, name: str, entry: KeyedClient | None) -> KeyFile:
    """The key file with one client set (None: removed)."""
    clients = {k: v for k, v in keys.clients.items() if k != name}
    if entry is not None:
        clients[name] = entry
    return KeyFile(clients=clients)


def with_variable(text: str | None, variable: str, value: str) -> str:
    """An environment file's text with `variable=value` (its last assignment replaced,
    earlier ones dropped; appended when there is none), every other line as it was."""
    lines = (text or "").splitlines()
    kept = [line for line in lines if not _assigns(line, variable)]
    at = max((i for i, line in enumerate(lines) if _assigns(line, variable)), default=None)
    new = f"{variable}={value}"
    if at is None:
        kept.append(new)
    else:
        before = sum(1 for line in lines[:at] if not _assigns(line, variable))
        kept.insert(before, new)
    return "\n".join(kept) + "\n"


def without_variable(text: str, variable: str) -> str:
    """An environment file's text with every assignment of `variable` dropped."""
    kept = [line for line in text.splitlines() if not _assigns(line, variable)]
    return "\n".join(kept) + ("\n" if kept else "")


def _assigns(line: str, variable: str) -> bool:
    stripped = line.strip().removeprefix("export ").lstrip()
    return stripped.startswith(f"{variable}=") or stripped.startswith(f"{variable} =")
