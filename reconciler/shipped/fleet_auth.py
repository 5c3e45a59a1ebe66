"""fleet's key check for the LiteLLM proxy: `general_settings.custom_auth:
fleet_auth.user_api_key_auth`, shipped by fleet beside the proxy's config.

Each request's key is checked against `fleet_keys.json` beside this file, which holds only
the SHA-256 of each client's keys with its client's name, aliases and limits (fleet
renders it; `fleet.gateways.keyfile` is its format). A key the file does not know is
refused (401); a known key on an alias its client may not call, or on a route that is no
model call, is refused (403), both in LiteLLM's error shape. The master key (the proxy's
own, for fleet's verification and the operators) is accepted as LiteLLM would.

The file is looked at on every request (one `stat`) and read again when its inode, mtime
or size moved: fleet replaces it atomically (a rename), so adding, rotating or revoking a
key needs no restart. An unreadable or malformed file refuses every client key (the
master key still works) until a good one replaces it.

Standard library only: this runs in the proxy's own Python, not fleet's. LiteLLM is
imported inside the hook alone, so the logic is tested without it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import threading
from typing import Any

KEY_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fleet_keys.json")
MAX_BYTES = 4 * 1024 * 1024  # a key file larger than this is refused, unread
MAX_CLIENTS = 10000
MAX_HASHES = 4  # keys a client may hold at once (its old one while a rotation runs)
_HASH = re.compile(r"^sha256:[0-9a-f]{64}$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_ALIAS = re.compile(r"^[A-Za-z0-9*][A-Za-z0-9._:/@+=,-]{0,199}$")
MODEL_ROUTES = frozenset(
    {
        "/chat/completions",
        "/v1/chat/completions",
        "/completions",
        "/v1/completions",
        "/embeddings",
        "/v1/embeddings",
        "/rerank",
        "/v1/rerank",
        "/v2/rerank",
    }
)
LIST_ROUTES = frozenset({"/models", "/v1/models"})


class Refused(Exception):
    """A request the key check refuses: its HTTP status and message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def hash_key(key: str) -> str:
    """`sha256:<hex>` of a key."""
    return "sha256:" + hashlib.sha256(key.encode("utf-8")).hexdigest()


def parse(text: str) -> dict[str, dict[str, Any]]:
    """hash -> {client, aliases, rpm, tpm} of a key file's text; ValueError when it is
    not one (every field checked: the file is data, never trusted beyond its shape)."""
    if len(text) > MAX_BYTES:
        raise ValueError("key file too large")
    data = json.loads(text)
    if not isinstance(data, dict) or data.get("fleet_keys") != 1:
        raise ValueError("not a fleet key file (version 1)")
    clients = data.get("clients")
    if not isinstance(clients, dict):
        raise ValueError("not a fleet key file (version 1)")
    if len(clients) > MAX_CLIENTS:
        raise ValueError("too many clients")
    table: dict[str, dict[str, Any]] = {}
    for name, entry in clients.items():
        table.update(_entry(name, entry))
    return table


def _entry(name: Any, entry: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(name, str) or not _NAME.match(name) or not isinstance(entry, dict):
        raise ValueError("a client entry is malformed")
    aliases, hashes = entry.get("aliases"), entry.get("hashes")
    if not isinstance(aliases, list) or not all(
        isinstance(a, str) and _ALIAS.match(a) for a in aliases
    ):
        raise ValueError(f"client {name}: aliases malformed")
    if not isinstance(hashes, list) or len(hashes) > MAX_HASHES:
        raise ValueError(f"client {name}: hashes malformed")
    limits = {k: entry.get(k) for k in ("rpm", "tpm")}
    for value in limits.values():
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise ValueError(f"client {name}: limits malformed")
    found = {"client": name, "aliases": frozenset(aliases), **limits}
    table = {}
    for digest in hashes:
        if not isinstance(digest, str) or not _HASH.match(digest):
            raise ValueError(f"client {name}: a hash is malformed")
        table[digest] = found
    return table


class KeyTable:
    """The key file's table, read again whenever the file changes."""

    def __init__(self, path: str = KEY_FILE) -> None:
        self.path = path
        self._stamp: tuple[int, int, int] | None = None
        self._table: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def lookup(self, key: str) -> dict[str, Any] | None:
        """The client entry of a key, None when the file does not hold its hash."""
        self._refresh()
        return self._table.get(hash_key(key))

    def _refresh(self) -> None:
        try:
            st = os.stat(self.path)
            stamp: tuple[int, int, int] | None = (st.st_ino, st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = None
        if stamp == self._stamp and stamp is not None:
            return
        with self._lock:
            try:
                with open(self.path, encoding="utf-8") as handle:
                    table = parse(handle.read(MAX_BYTES + 1))
            except (OSError, ValueError, RecursionError):
                table = {}  # unreadable or malformed: no client key passes
            self._table, self._stamp = table, stamp


def decide(
    table: KeyTable, key: str | None, master: str | None, route: str, model: Any
) -> dict[str, Any] | None:
    """None for the master key, the client's entry for a client key allowed here;
    `Refused` (401 unknown key, 403 alias or route not allowed) otherwise."""
    key = (key or "").strip()
    if key.lower().startswith("bearer "):
        key = key[7:].strip()
    if not key:
        raise Refused(401, "No API key passed in.")
    if master and hmac.compare_digest(key.encode(), master.encode()):
        return None
    entry = table.lookup(key)
    if entry is None:
        raise Refused(401, "Authentication Error, invalid API key.")
    if route in LIST_ROUTES:
        return entry
    if route not in MODEL_ROUTES:
        raise Refused(403, f"client {entry['client']} may not call {route}")
    allowed = entry["aliases"]
    if "*" not in allowed and (not isinstance(model, str) or model not in allowed):
        shown = model if isinstance(model, str) and _ALIAS.match(model) else "this model"
        raise Refused(403, f"client {entry['client']} may not call {shown}")
    return entry


TABLE = KeyTable()


async def user_api_key_auth(request: Any, api_key: str) -> Any:
    """LiteLLM's custom_auth hook: a `UserAPIKeyAuth`, or a `ProxyException` (401/403)."""
    from litellm.proxy._types import LitellmUserRoles, ProxyException, UserAPIKeyAuth
    from litellm.proxy.common_utils.http_parsing_utils import _read_request_body
    from litellm.proxy.proxy_server import master_key

    route = request.url.path
    model = None
    if route in MODEL_ROUTES and request.method == "POST":
        body = await _read_request_body(request=request)
        model = body.get("model") if isinstance(body, dict) else None
    try:
        entry = decide(TABLE, api_key, master_key, route, model)
    except Refused as refused:
        raise ProxyException(
            message=refused.message, type="auth_error", param="api_key", code=refused.status
        ) from None
    if entry is None:
        return UserAPIKeyAuth(api_key=master_key, user_role=LitellmUserRoles.PROXY_ADMIN)
    aliases = sorted(entry["aliases"])
    return UserAPIKeyAuth(
        token=hash_key(api_key.removeprefix("Bearer ").strip())[7:],
        key_alias=entry["client"],
        user_id=f"fleet-client-{entry['client']}",
        models=[] if "*" in aliases else aliases,
        rpm_limit=entry["rpm"],
        tpm_limit=entry["tpm"],
        user_role=LitellmUserRoles.INTERNAL_USER,
    )
