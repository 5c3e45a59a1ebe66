"""Findings about clients' keys: what the gateway's key file holds against what desired/
declares and what each client's host holds (hashes on both sides, never a key).

Pure; called by `fleet.observed.findings` (plan, inventory, the loop's metrics) and by
`fleet check`, which is not in sync while any of them holds:
- `client-key-missing`: a reachable client's file holds no key;
- `client-key-drift`: the key in a client's file is not one the gateway holds (changed
  by hand, or a rotation half done);
- `client-not-at-gateway`: a declared client the key file does not hold;
- `undeclared-client`: the key file holds a client desired/ does not declare (a key that
  works and that nobody reviews);
- `key-file-unreadable`: the key file is not one fleet can read (every client refused).
Each finding is (kind, target, message).
"""

from __future__ import annotations

from fleet.observed.models import Observation
from fleet.spec.models import DesiredFleet

Found = tuple[str, str, str]


def client_findings(desired: DesiredFleet, observation: Observation) -> list[Found]:
    """Every finding about clients' keys."""
    gateway, live = desired.gateway, observation.gateway
    if gateway is None or live is None or live.keys is None:
        return []
    keys = live.keys
    if keys.error is not None:
        return [("key-file-unreadable", f"gateway {live.host}", keys.error)]
    held = keys.file.clients if keys.file is not None else {}
    found: list[Found] = []
    for name in sorted(gateway.clients):
        target = f"client {name}"
        entry = held.get(name)
        if entry is None or not entry.hashes:
            found.append(("client-not-at-gateway", target, "the gateway holds no key for it"))
            continue
        seen = observation.clients.get(name)
        if seen is None or not seen.reachable:
            continue
        if seen.delivered is None:
            found.append(("client-key-missing", target, f"no key at {seen.where}"))
        elif seen.delivered not in entry.hashes:
            found.append(
                (
                    "client-key-drift",
                    target,
                    f"the key at {seen.where} is not one the gateway holds (changed by hand?)",
                )
            )
    for name in sorted(set(held) - set(gateway.clients)):
        found.append(
            (
                "undeclared-client",
                f"client {name}",
                "the gateway's key file holds a client desired/ does not declare",
            )
        )
    return found
