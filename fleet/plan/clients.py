"""Client actions: which keys the gateway must learn, change, replace or forget.

Called by `fleet.plan.plan.make_plan`. Compares gateway.yaml's `clients:` with the key
file observed on the gateway host and each client's delivered key (its hash):
- `add-client`: a client the key file does not hold (a key is issued and delivered);
- `update-client`: its aliases or limits differ (the same key, a new entry);
- `rekey-client`: its delivered key is missing or not one the gateway holds, or its
  rotation period has passed since its newest key was issued;
- `revoke-client`: a client in the key file that desired/ no longer declares.
A key file fleet cannot read is a blocker: it would be overwritten blind. Pure.
"""

from __future__ import annotations

from datetime import datetime

from fleet.facts.client_keys import KeyedClient
from fleet.observed.models import Observation
from fleet.plan.actions import Action, ActionKind, Blocker
from fleet.spec.clients import GatewayClient
from fleet.spec.models import DesiredFleet


def client_actions(
    desired: DesiredFleet, observation: Observation
) -> tuple[list[Action], list[Blocker]]:
    """The client wave's actions, and a blocker when the key file cannot be read."""
    gateway, live = desired.gateway, observation.gateway
    if gateway is None or live is None or not live.reachable:
        return [], []
    keys = live.keys
    if keys is not None and keys.error is not None:
        message = f"the key file beside {gateway.config_path}: {keys.error}; fix or remove it"
        return [], [Blocker(target="clients", message=message)]
    held = keys.file.clients if keys is not None and keys.file is not None else {}
    found = []
    for name, client in sorted(gateway.clients.items()):
        found += _client_action(name, client, held.get(name), observation)
    for name in sorted(set(held) - set(gateway.clients)):
        reason = "not in desired/: its key is refused from now on"
        found.append(_action(ActionKind.REVOKE_CLIENT, name, gateway.host, reason))
    return found, []


def _client_action(
    name: str, client: GatewayClient, held: KeyedClient | None, observation: Observation
) -> list[Action]:
    host = observation.gateway.host if observation.gateway else ""
    if held is None or not held.hashes:
        reason = f"key for {', '.join(_aliases(client))} -> {client.where()}"
        return [_action(ActionKind.ADD_CLIENT, name, host, reason)]
    found = []
    if held.aliases != client.allowed():
        reason = f"aliases {', '.join(held.aliases)} -> {', '.join(client.allowed())}"
        found.append(_action(ActionKind.UPDATE_CLIENT, name, host, reason))
    elif (held.rpm, held.tpm) != (client.rpm, client.tpm):
        reason = f"limits rpm {held.rpm}, tpm {held.tpm} -> rpm {client.rpm}, tpm {client.tpm}"
        found.append(_action(ActionKind.UPDATE_CLIENT, name, host, reason))
    if (why := _rekey_reason(name, client, held, observation)) is not None:
        found.append(_action(ActionKind.REKEY_CLIENT, name, host, f"{why} -> {client.where()}"))
    return found


def _rekey_reason(
    name: str, client: GatewayClient, held: KeyedClient, observation: Observation
) -> str | None:
    seen = observation.clients.get(name)
    if seen is not None and seen.reachable:
        if seen.delivered is None:
            return f"no key at {seen.where}: a new key"
        if seen.delivered not in held.hashes:
            return f"the key at {seen.where} is not one the gateway holds: a new key"
    if client.rotate_every is not None and _age(held.issued, observation.observed_at) is not None:
        age = _age(held.issued, observation.observed_at) or 0.0
        if age >= client.rotate_every:
            return f"rotation due (issued {held.issued})"
    return None


def _age(issued: str | None, now: str) -> float | None:
    """Seconds from `issued` to `now` (both UTC ISO times); None if either is unreadable."""
    try:
        then = datetime.fromisoformat((issued or "").replace("Z", "+00:00"))
        return (datetime.fromisoformat(now.replace("Z", "+00:00")) - then).total_seconds()
    except ValueError:
        return None


def _aliases(client: GatewayClient) -> tuple[str, ...]:
    return ("every alias",) if client.allowed() == ("*",) else client.allowed()


def _action(kind: ActionKind, name: str, host: str, reason: str) -> Action:
    return Action(kind=kind, target=name, host=host, reasons=(reason,))


def module_restart(desired: DesiredFleet, observation: Observation) -> Action | None:
    """A gateway restart when clients are declared but the proxy's auth module beside the
    config is missing or not the one fleet ships (it is loaded at a proxy's start)."""
    gateway, live = desired.gateway, observation.gateway
    if gateway is None or not gateway.clients or live is None or live.keys is None:
        return None
    if live.keys.module == "current":
        return None
    return Action(
        kind=ActionKind.RESTART_GATEWAY,
        target="gateway",
        host=gateway.host,
        reasons=(f"load fleet's key check (its module is {live.keys.module} on {gateway.host})",),
    )
