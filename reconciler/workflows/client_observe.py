"""Observe the gateway's clients read-only: the key check on the gateway host, and each
reachable client's delivered key, turned into its hash at once.

Called by `reconciler.workflows.observe` (one SFTP read of the key file and one of the
auth module on the gateway host; one read of each client's file on its host, hosts in
parallel). A delivered key never leaves `observe_client`: only its SHA-256 does.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from fleet.errors import FleetError
from fleet.facts.client_keys import delivered_hash, parse_key_file
from fleet.names import AUTH_MODULE_NAME, KEY_FILE_NAME, beside
from fleet.observed.models import ObservedClient, ObservedKeys
from fleet.spec.clients import ClientDelivery
from fleet.spec.models import DesiredFleet, Gateway
from reconciler.host import HostSession, Sessions
from reconciler.shipped import shipped_text


def observe_keys(conn: HostSession, gateway: Gateway) -> ObservedKeys | None:
    """The key file and the auth module beside the config (None: no clients, no file)."""
    text = conn.read_file(beside(gateway.config_path, KEY_FILE_NAME))
    if text is None and not gateway.clients:
        return None
    module = conn.read_file(beside(gateway.config_path, AUTH_MODULE_NAME))
    state = "missing" if module is None else "current"
    if module is not None and module != shipped_text(AUTH_MODULE_NAME):
        state = "stale"
    if text is None:
        return ObservedKeys(module=state)
    parsed = parse_key_file(text)
    if isinstance(parsed, str):
        return ObservedKeys(error=parsed, module=state)
    return ObservedKeys(file=parsed, module=state)


def observe_clients(desired: DesiredFleet, connections: Sessions) -> dict[str, ObservedClient]:
    """Each client with a host delivery: the hash of the key in its file."""
    gateway = desired.gateway
    if gateway is None:
        return {}
    reached = sorted(
        (name, client.delivery)
        for name, client in gateway.clients.items()
        if isinstance(client.delivery, ClientDelivery)
    )
    with ThreadPoolExecutor(max_workers=max(min(len(reached), 8), 1)) as pool:
        found = pool.map(lambda item: observe_client(connections, *item), reached)
        return {client.name: client for client in found}


def observe_client(connections: Sessions, name: str, delivery: ClientDelivery) -> ObservedClient:
    """One client's delivered key, as its hash."""
    where = delivery.where()
    try:
        text = connections.get(delivery.host).read_file(delivery.file)
    except FleetError as err:
        return ObservedClient(name=name, where=where, reachable=False, error=err.message)
    if text is None:
        return ObservedClient(name=name, where=where)
    return ObservedClient(name=name, where=where, delivered=delivered_hash(text, delivery.variable))
