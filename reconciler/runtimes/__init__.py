"""Host runtimes as they run on a host: one adapter per runtime of `fleet.runtimes`.

`adapter_for(host)` gives the adapter of the runtime a host names (`runtime:` in
desired/hosts/<host>.yaml); its protocol is `reconciler.runtimes.base.RuntimeAdapter`,
with capabilities only some runtimes have as protocols of their own (`AdoptsHandMade`).
Adding a runtime: `reconciler/runtimes/<name>.py` and one line in ADAPTERS.
"""

from __future__ import annotations

from fleet.errors import ApplyError
from fleet.spec.models import Host
from reconciler.runtimes.base import AdoptsHandMade, RuntimeAdapter, Snapshot
from reconciler.runtimes.compose import COMPOSE_ADAPTER
from reconciler.runtimes.systemd import SYSTEMD_ADAPTER

ADAPTERS: dict[str, RuntimeAdapter] = {
    COMPOSE_ADAPTER.runtime.NAME: COMPOSE_ADAPTER,
    SYSTEMD_ADAPTER.runtime.NAME: SYSTEMD_ADAPTER,
}

__all__ = ["ADAPTERS", "AdoptsHandMade", "RuntimeAdapter", "Snapshot", "adapter_for", "hand_made"]


def adapter_for(host: Host) -> RuntimeAdapter:
    """The adapter of the runtime the host runs its seats under."""
    return ADAPTERS[host.runtime]


def hand_made(host: Host) -> AdoptsHandMade:
    """The host's adapter, as one that adopts hand-made instances (ApplyError if not)."""
    adapter = adapter_for(host)
    if not isinstance(adapter, AdoptsHandMade):
        raise ApplyError(f"the {host.runtime} runtime of {host.name} cannot adopt hand-made seats")
    return adapter
