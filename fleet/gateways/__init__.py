"""Gateway kinds: what fleet needs to know of the proxy that maps aliases to seats.

A kind (`GatewayKind`) says how its config is read (`parse_config`: text -> the neutral
`GatewayConfig` of entries and fallbacks), how fleet's entries are spliced into it
(`render_config`, every foreign byte kept), and how a running proxy is asked whether it is
ready, which aliases it lists and whether an alias answers (paths and bodies, no I/O), and
what `fleet import` writes of a config found on a host.
The shell (`reconciler.workflows.gateway`, `reconciler.workflows.bluegreen`) observes,
applies, verifies and rolls back through it; `fleet.plan.aliases` plans through it.
LiteLLM (`fleet.gateways.litellm`) is the built-in kind; a front in front of it (nginx,
`fleet.gateways.nginx`) is a capability of the gateway, not a kind.

To add a kind: one module or package implementing `GatewayKind`, added by `register` (which
also makes its name a value of `kind:` in desired/gateway.yaml); `kind_of` picks a
gateway's kind by that name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from fleet.spec.host_settings import KIND_SETTINGS, KindSettings, register_kind_settings
from fleet.spec.models import DesiredFleet, Gateway

if TYPE_CHECKING:  # for annotations only: `fleet validate` observes nothing
    from fleet.observed.gateway_config import GatewayConfig, GatewayEntry
    from fleet.observed.models import Observation


class GatewayKind(Protocol):
    """One kind of gateway proxy."""

    name: str
    settings: type[KindSettings]  # the model of gateway.yaml's keys that are the kind's
    readiness_path: str  # GET: 200 once the proxy serves
    models_path: str  # GET: the aliases it lists
    routes_path: str | None  # GET: each alias it serves and its backend (None: no such page)
    metrics_path: str  # GET: its Prometheus metrics, as Prometheus scrapes it

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
    ) -> dict[str, GatewayEntry]:
        """alias -> the entry fleet writes for it (of `only` seats, if any)."""
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


class GatewayKindBase:
    """The defaults of a gateway kind (see `GatewayKind`): no keys of its own in
    gateway.yaml, no authorization header, no page of the backends it routes to."""

    settings: type[KindSettings] = KindSettings
    routes_path: str | None = None
    metrics_path: str = "/metrics"

    def headers(self, key: str | None) -> dict[str, str]:
        """No header: the proxy takes no key."""
        return {}

    def served_routes(self, body: Any) -> dict[str, str | None] | None:
        """None: the proxy says which aliases it serves (`models_path`), not where to."""
        return None


KINDS: dict[str, GatewayKind] = {}
"""Every gateway kind `kind:` may name, by name (filled by `register`)."""


def register(kind: GatewayKind) -> None:
    """Make a gateway kind known by its name (a value of gateway.yaml's `kind:`, its other
    keys read by the kind's `settings` model)."""
    KINDS[kind.name] = kind
    register_kind_settings(kind.name, kind.settings)


def unregister(name: str) -> None:
    """Forget a kind `register` added (a test's own, once it is done)."""
    KINDS.pop(name, None)
    KIND_SETTINGS.pop(name, None)


def kind_of(gateway: Gateway | str) -> GatewayKind:
    """The kind of a gateway (or of a kind's name); validation made sure it exists."""
    return KINDS[gateway if isinstance(gateway, str) else gateway.kind]


def default_kind() -> GatewayKind:
    """The kind of a gateway.yaml that names none (what `fleet import` reads a config as)."""
    return kind_of(str(Gateway.model_fields["kind"].default))


def _register_builtin() -> None:
    from fleet.gateways import litellm

    register(litellm.LITELLM)


_register_builtin()
