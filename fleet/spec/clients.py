"""Gateway clients: who may call which aliases, and where each one's key is delivered.

desired/gateway.yaml's `clients:` maps a client's name to a `GatewayClient`: the aliases it
may call (a list, or `all`), optional requests- and tokens-per-minute limits (LiteLLM
enforces them per key without a database), how often its key is rotated, and its
`delivery`: a host (one of desired/hosts, or a Host of the operator's ssh_config), a file
and a variable (`/etc/environment` `LITELLM_API_KEY` by default, or a 0600 env file of a
systemd service), or `manual` for a client fleet cannot reach. No key value is ever
written here: apply generates each key, delivers it and keeps only its hash at the gateway.
Read by `fleet.spec.models.Gateway`; checked by `fleet.spec.client_rules`.
"""

from typing import Literal

from pydantic import Field, field_validator

from fleet.base import CoreModel
from fleet.units import Seconds

ALL = "all"  # `aliases: all`: every alias the gateway routes
MANUAL = "manual"  # `delivery: manual`: fleet prints the key once, a person delivers it
ENVIRONMENT = "/etc/environment"
VARIABLE = "LITELLM_API_KEY"


class ClientDelivery(CoreModel):
    """Where a client's key goes: `VARIABLE=key` in a file of a host, written atomically
    (the file's mode kept; 0600 for a new file)."""

    host: str = Field(
        description="A host of desired/hosts, or a Host of the operator's ssh_config."
    )
    file: str = Field(
        ENVIRONMENT,
        description="The file on that host holding the variable (/etc/environment, or a "
        "0600 env file a systemd unit reads with EnvironmentFile=).",
    )
    variable: str = Field(VARIABLE, description="The variable the key is assigned to.")

    def where(self) -> str:
        """`host:file VARIABLE`, as plans and the inventory show it."""
        return f"{self.host}:{self.file} {self.variable}"


class GatewayClient(CoreModel):
    """One client of the gateway: its own key, refused on every alias but its own."""

    aliases: tuple[str, ...] | Literal["all"] = Field(
        description="The aliases this client may call, or `all`."
    )
    rpm: int | None = Field(None, ge=1, description="Requests per minute, enforced per key.")
    tpm: int | None = Field(None, ge=1, description="Tokens per minute, enforced per key.")
    delivery: ClientDelivery | Literal["manual"] = Field(
        description="{host, file, variable} where apply writes the key, or `manual`."
    )
    rotate_every: Seconds | None = Field(
        None, ge=60, description="Rotate the key this often (30d, 12h, ...): the loop does."
    )

    @field_validator("aliases", mode="before")
    @classmethod
    def _all_or_list(cls, value: object) -> object:
        if isinstance(value, str) and value != ALL:
            raise ValueError(f"a list of aliases, or {ALL!r}")
        return value

    @field_validator("delivery", mode="before")
    @classmethod
    def _manual_or_mapping(cls, value: object) -> object:
        if isinstance(value, str) and value != MANUAL:
            raise ValueError(f"{MANUAL!r}, or {{host, file, variable}}")
        return value

    @property
    def manual(self) -> bool:
        """True when a person delivers the key."""
        return self.delivery == MANUAL

    def allowed(self) -> tuple[str, ...]:
        """The aliases, sorted; ("*",) for all."""
        return ("*",) if self.aliases == ALL else tuple(sorted(set(self.aliases)))

    def where(self) -> str:
        """Where its key lives, as plans and the inventory show it."""
        return MANUAL if isinstance(self.delivery, str) else self.delivery.where()
