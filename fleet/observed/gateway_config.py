"""What a gateway's config says, in one shape for every gateway kind: aliases and fallbacks.

Each kind's parser (`fleet.gateways.GatewayKind.parse_config`; LiteLLM's is
`fleet.gateways.litellm.config`) reads its config text into a `GatewayConfig`, and each
kind says what it would write for desired/ as the same `GatewayEntry`s
(`GatewayKind.desired_entries`); observation, plan and the reports compare those and never
a kind's own shape. fleet marks the entries it manages with an id of the form
`fleet:<seat>:<alias>` (`fleet.names.entry_id`, wherever the kind keeps it); an entry's
`seat` is read from it, and every other entry is foreign and never touched.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from fleet.base import CoreModel


class GatewayEntry(CoreModel):
    """One entry of a gateway's config: an alias and where it routes.

    `seat` is the seat a managed entry was written for (None: a foreign entry), `address`
    the backend's base URL it routes to, `model` the upstream model the proxy asks for
    (LiteLLM: provider prefix and name), `context` the context it tells clients the model
    takes (None where it says none, or says more than fleet writes), `params` the entry's
    other routing parameters, `line` where the entry starts in the config text.
    """

    alias: str
    seat: str | None = None
    address: str | None = None
    model: str | None = None
    context: int | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    line: int | None = None

    @property
    def managed(self) -> bool:
        """True when fleet owns this entry."""
        return self.seat is not None

    def route(self) -> tuple[str | None, str | None, dict[str, Any]]:
        """Where it routes and how: address, model and params."""
        return self.address, self.model, self.params


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
