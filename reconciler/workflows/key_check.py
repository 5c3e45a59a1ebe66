"""The gateway's key check on its host: the shipped auth module and the key file, both
beside the config.

Used by `reconciler.workflows.gateway` (a config naming the module is put live only with
the module and a key file beside it: a proxy loads the module at start) and by
`reconciler.workflows.client_apply` (each client's hashes, written atomically; the module
reads the file again when it is replaced, so no proxy restarts).
"""

from __future__ import annotations

from fleet.errors import GatewayError
from fleet.facts.client_keys import KeyedClient, KeyFile, parse_key_file
from fleet.gateways.keyfile import render_key_file, with_client
from fleet.names import AUTH_MODULE_NAME, CUSTOM_AUTH, KEY_FILE_NAME, beside
from fleet.spec.models import Gateway
from reconciler.host import HostSession
from reconciler.shipped import shipped_text


def ensure_key_check(conn: HostSession, gateway: Gateway, config_text: str) -> None:
    """When `config_text` names fleet's key check: the shipped module beside the config
    (replaced if it differs) and a key file (an empty one if there is none)."""
    if CUSTOM_AUTH not in config_text:
        return
    module = beside(gateway.config_path, AUTH_MODULE_NAME)
    shipped = shipped_text(AUTH_MODULE_NAME)
    if conn.read_file(module) != shipped:
        conn.write_file_atomic(module, shipped, mode_of=gateway.config_path)
    if conn.read_file(key_file_path(gateway)) is None:
        write_keys(conn, gateway, KeyFile())


def key_file_path(gateway: Gateway) -> str:
    """Where the key file is on the gateway host."""
    return beside(gateway.config_path, KEY_FILE_NAME)


def read_keys(conn: HostSession, gateway: Gateway) -> KeyFile:
    """The key file as it is now (empty when there is none); GatewayError if unreadable."""
    text = conn.read_file(key_file_path(gateway))
    if text is None:
        return KeyFile()
    parsed = parse_key_file(text)
    if isinstance(parsed, str):
        raise GatewayError(f"{key_file_path(gateway)} on {gateway.host}: {parsed}")
    return parsed


def write_keys(conn: HostSession, gateway: Gateway, keys: KeyFile) -> None:
    """Replace the key file at once, with the config's mode (the proxy reads both)."""
    conn.write_file_atomic(
        key_file_path(gateway), render_key_file(keys), mode_of=gateway.config_path
    )


def set_client(conn: HostSession, gateway: Gateway, name: str, entry: KeyedClient | None) -> None:
    """One client's entry in the key file, every other client's as it is now."""
    write_keys(conn, gateway, with_client(read_keys(conn, gateway), name, entry))
