"""Gateway kinds: what fleet needs to know of the proxy that maps aliases to seats.

A kind (`GatewayKind`) says how its config is read (`parse_config`: text -> the neutral
`GatewayConfig` of entries and fallbacks), how fleet's entries are spliced into it
(`render_config`, every foreign byte kept), and how a running proxy is asked whether it is
ready, which aliases it lists and whether an alias answers (paths and bodies, no I/O), and
what `fleet import` writes of a config found on a host.
The shell (`reconciler.workflows.gateway`, `reconciler.workflows.bluegreen`) observes,
applies, verifies and rolls back through it; `fleet.plan.aliases` plans through it.
LiteLLM (`fleet.gateways.litellm`) is the one kind today; a front in front of it (nginx,
`fleet.gateways.nginx`) is a capability of the gateway, not a kind.

To add a kind: one module or package here implementing `GatewayKind`, one line in
`kind_of`, and the value in `Gateway.kind` (desired/gateway.yaml).
"""

from __future__ import annotations

from typing import Any, Protocol

from fleet.observed.gateway_config import GatewayConfig
from fleet.observed.models import Observation
from fleet.spec.models import DesiredFleet, Gateway


class GatewayKind(Protocol):
    """One kind of gateway proxy."""

    name: str
    readiness_path: str  # GET: 200 once the proxy serves
    models_path: str  # GET: the aliases it lists
    routes_path: str  # GET: each alias it serves and the backend it routes it to

    def served_routes(self, body: Any) -> dict[str, str | None] | None:
        """alias -> api_base of a routes_path answer (None: not such an answer)."""
        ...

    def parse_config(self, text: str) -> GatewayConfig:
        """Entries and fallbacks of a config text (GatewayError when unreadable)."""
        ...

    def render_config(self, text: str, desired: DesiredFleet, only: frozenset[str]) -> str:
        """The config text with fleet's entries as desired/ says, every other byte kept."""
        ...

    def desired_entries(
        self, desired: DesiredFleet, only: frozenset[str]
    ) -> dict[str, dict[str, Any]]:
        """alias -> the entry fleet writes for it."""
        ...

    def listed(self, body: Any) -> set[str]:
        """The aliases a models_path answer lists."""
        ...

    def chat(self, alias: str) -> tuple[str, dict[str, Any]]:
        """(path, JSON body) of one short chat completion to an alias."""
        ...

    def headers(self, key: str | None) -> dict[str, str]:
        """The request headers that authorize fleet with the proxy's key."""
        ...

    def imported_file(
        self,
        gateway: tuple[str, str, str | None],
        address: str,
        where: dict[tuple[str, int], str],
        observation: Observation,
    ) -> tuple[str, dict[str, tuple[str, ...]]]:
        """gateway.yaml of `fleet import` from a config as it is (host, path, text), and
        per seat the aliases routing to it (`where`: (address, port) -> seat)."""
        ...


def kind_of(gateway: Gateway | None) -> GatewayKind:
    """The kind of a gateway (LiteLLM)."""
    from fleet.gateways import litellm

    return litellm.LITELLM
