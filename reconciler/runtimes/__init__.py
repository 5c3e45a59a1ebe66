"""Host runtimes as they run on a host: one adapter per runtime of `fleet.runtimes`.

`adapter_for(host)` gives the adapter of the runtime a host names (`runtime:` in
desired/hosts/<host>.yaml); its protocol is `reconciler.runtimes.base.RuntimeAdapter`,
with capabilities only some runtimes have as mixins their adapters inherit
(`AdoptsHandMade`). Adding a runtime: `reconciler/runtimes/<name>.py`, whose adapter
`register` adds (with its pure half, `fleet.runtimes.register`).
"""

from __future__ import annotations

from fleet.errors import ApplyError
from fleet.runtimes import register as register_runtime
from fleet.runtimes import unregister as unregister_runtime
from fleet.spec.models import Host
from reconciler.runtimes.base import AdoptsHandMade, RuntimeAdapter, Snapshot
from reconciler.runtimes.compose import COMPOSE_ADAPTER
from reconciler.runtimes.systemd import SYSTEMD_ADAPTER

ADAPTERS: dict[str, RuntimeAdapter] = {}
"""Each runtime's adapter, by the runtime's name (filled by `register`)."""

__all__ = [
    "ADAPTERS",
    "AdoptsHandMade",
    "RuntimeAdapter",
    "Snapshot",
    "adapter_for",
    "hand_made",
    "register",
    "unregister",
]


def register(adapter: RuntimeAdapter) -> None:
    """Make a runtime known, both halves: its pure runtime (`fleet.runtimes.register`)
    and this adapter, under the runtime's NAME."""
    register_runtime(adapter.runtime)
    ADAPTERS[adapter.runtime.NAME] = adapter


def unregister(name: str) -> None:
    """Forget a runtime `register` added (a test's own, once it is done)."""
    unregister_runtime(name)
    ADAPTERS.pop(name, None)


register(COMPOSE_ADAPTER)
register(SYSTEMD_ADAPTER)


def adapter_for(host: Host) -> RuntimeAdapter:
    """The adapter of the runtime the host runs its seats under."""
    return ADAPTERS[host.runtime]


def hand_made(host: Host) -> AdoptsHandMade:
    """The host's adapter, as one that adopts hand-made instances (ApplyError if not)."""
    adapter = adapter_for(host)
    if not isinstance(adapter, AdoptsHandMade):
        raise ApplyError(f"the {host.runtime} runtime of {host.name} cannot adopt hand-made seats")
    return adapter
