"""LiteLLM, the gateway kind: its config file, fleet's entries in it, and its endpoints.

The config is LiteLLM's proxy YAML (`model_list`, `router_settings.fallbacks`), read by
`fleet.gateways.litellm.config` and spliced by `fleet.gateways.litellm.render` (entries
marked `model_info.id: fleet:<seat>:<alias>`; `model_info` carries the seat's context);
`fleet import` writes gateway.yaml from a config as it is
(`fleet.gateways.litellm.imported`). A proxy is ready when `/health/liveliness` answers,
lists its aliases on `/v1/models` (OpenAI's list) and answers `/v1/chat/completions`; the
key goes in `Authorization: Bearer`. Used through `fleet.gateways.kind_of`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fleet.facts.openai_models import model_ids
from fleet.gateways import GatewayKindBase
from fleet.gateways.litellm.settings import LiteLLMSettings
from fleet.spec.host_settings import KindSettings
from fleet.spec.models import DesiredFleet

if TYPE_CHECKING:  # for annotations only: `fleet validate` observes nothing
    from fleet.observed.gateway_config import GatewayConfig, GatewayEntry
    from fleet.observed.models import Observation


class LiteLLM(GatewayKindBase):
    """The LiteLLM proxy (`litellm --config`)."""

    name = "litellm"
    settings: type[KindSettings] = LiteLLMSettings
    readiness_path = "/health/liveliness"
    models_path = "/v1/models"
    metrics_path = "/metrics/"  # a mounted app: /metrics answers with a redirect to it
    routes_path: str | None = "/model/info"

    def served_routes(self, body: Any) -> dict[str, str | None] | None:
        """alias -> api_base of what the running proxy loaded (`/model/info`)."""
        from fleet.gateways.litellm.served import served_routes

        return served_routes(body)

    def parse_config(self, text: str) -> GatewayConfig:
        """Entries and fallbacks of a LiteLLM config (its reader only where one is read)."""
        from fleet.gateways.litellm.config import parse_gateway_config

        return parse_gateway_config(text)

    def render_config(self, text: str, desired: DesiredFleet, only: frozenset[str]) -> str:
        """The config with fleet's entries spliced in."""
        from fleet.gateways.litellm import render  # its YAML writer only where it writes

        return render.render_gateway_config(text, desired, only)

    def desired_entries(
        self, desired: DesiredFleet, only: frozenset[str]
    ) -> dict[str, GatewayEntry]:
        """alias -> the model_list item fleet writes, as the neutral entry."""
        from fleet.gateways.litellm import render
        from fleet.gateways.litellm.config import entry_of

        items = render.desired_entries(desired, only)
        return {alias: entry_of(item) for alias, item in items.items()}

    def listed(self, body: Any) -> set[str]:
        """The model ids of an OpenAI model list."""
        return set(model_ids(body) or ())

    def chat(self, alias: str) -> tuple[str, dict[str, Any]]:
        """A chat completion of at most 4 tokens."""
        body = {"model": alias, "max_tokens": 4, "messages": [{"role": "user", "content": "ping"}]}
        return "/v1/chat/completions", body

    def headers(self, key: str | None) -> dict[str, str]:
        """Bearer authorization with the master key."""
        return {"Authorization": f"Bearer {key}"} if key else {}

    def imported_file(
        self,
        gateway: tuple[str, str, str | None],
        address: str,
        where: dict[tuple[str, int], str],
        observation: Observation,
    ) -> tuple[str, dict[str, tuple[str, ...]]]:
        """gateway.yaml from the LiteLLM config as it is."""
        from fleet.gateways.litellm.imported import gateway_file

        return gateway_file(gateway, address, where, observation)


LITELLM = LiteLLM()
