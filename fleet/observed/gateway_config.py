"""What a gateway's config says, in one shape for every gateway kind: aliases and fallbacks.

Each kind's parser (`fleet.gateways.GatewayKind.parse_config`; LiteLLM's is
`fleet.gateways.litellm.config`) reads its config text into a `GatewayConfig`; observation,
plan and the renderer read that. fleet marks the entries it manages with an id of the form
`fleet:<seat>:<alias>` (`fleet.names.entry_id`); every other entry is foreign and never
touched.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from fleet.base import CoreModel
from fleet.names import is_managed_entry


class GatewayEntry(CoreModel):
    """One entry of a gateway's config: an alias and where it routes.

    `model` is the upstream model the proxy asks for (LiteLLM: provider prefix and name),
    `params` the entry's other routing parameters, `info` what it says of the model but its
    id, `line` where the entry starts in the config text.
    """

    alias: str
    model: str | None = None
    api_base: str | None = None
    entry_id: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    info: dict[str, Any] = Field(default_factory=dict)  # model_info but its id
    line: int | None = None

    @property
    def managed(self) -> bool:
        """True when fleet owns this entry."""
        return is_managed_entry(self.entry_id)

    @property
    def seat(self) -> str | None:
        """The seat a managed entry was written for."""
        if not self.managed or self.entry_id is None:
            return None
        return self.entry_id.split(":")[1]


class GatewayConfig(CoreModel):
    """The parsed config: entries in file order and the fallbacks."""

    entries: tuple[GatewayEntry, ...] = ()
    fallbacks: dict[str, tuple[str, ...]] = Field(default_factory=dict)

    def by_alias(self) -> dict[str, GatewayEntry]:
        """First entry per alias (LiteLLM load-balances duplicates; fleet writes one)."""
        found: dict[str, GatewayEntry] = {}
        for entry in self.entries:
            found.setdefault(entry.alias, entry)
        return found
