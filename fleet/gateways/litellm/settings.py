"""LiteLLM's own keys of gateway.yaml: the provider prefix and extra parameters per alias.

Registered with the kind (`fleet.gateways.litellm.LiteLLM.settings`), read from
gateway.yaml's keys that are not the neutral gateway's (`fleet.spec.host_settings`); used
by the splice (`fleet.gateways.litellm.render`).
"""

from collections.abc import Iterator
from typing import Any

from pydantic import Field

from fleet.spec.host_settings import KindSettings


class LiteLLMSettings(KindSettings):
    """LiteLLM's own keys of gateway.yaml."""

    provider_prefix: str = Field("hosted_vllm/", description="LiteLLM provider prefix.")
    alias_params: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Extra litellm_params per alias."
    )

    def named_aliases(self) -> Iterator[tuple[str, str]]:
        for alias in self.alias_params:
            yield "alias_params", alias
