"""desired/gateway.yaml: the gateway proxy (`Gateway`), how it restarts, its front.

Part of the desired-state model (`fleet.spec.models`, which re-exports it). The keys that
are not the neutral ones are the gateway kind's (`fleet.spec.host_settings`).
"""

from typing import Literal, Self

from pydantic import (
    AliasChoices,
    ConfigDict,
    Field,
    SerializeAsAny,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from fleet.base import CoreModel
from fleet.spec.clients import GatewayClient
from fleet.spec.host_settings import (
    KIND_SETTINGS,
    KindSettings,
    WithSettings,
    default_settings,
    settings_schema,
)


class GatewayRestart(CoreModel):
    """How the gateway picks up a new config: an instance its host's runtime restarts (a
    compose host's container, a systemd host's unit), or a command."""

    instance: str | None = Field(
        None,
        validation_alias=AliasChoices("instance", "container"),
        description="The proxy's instance on the gateway host, restarted by that host's "
        "runtime (a container's name; `container:` says the same).",
    )
    command: str | None = Field(None, description="Command run on the gateway host.")

    @model_validator(mode="after")
    def _exactly_one(self) -> Self:
        if (self.instance is None) == (self.command is None):
            raise ValueError("give exactly one of instance (or container) and command")
        return self


class GatewayFront(CoreModel):
    """A reverse proxy (nginx) in front of the LiteLLM proxy: with one, fleet changes the
    proxy blue/green behind it (a second proxy on the other port, then the front switches)."""

    kind: Literal["nginx"] = Field("nginx", description="The front's kind (nginx).")
    upstream_file: str = Field(
        description="File on the gateway host that the front's upstream block includes; "
        "fleet writes `server ADDR:PORT;` there."
    )
    reload: str = Field("nginx -s reload", description="Command that reloads the front.")
    proxy_address: str | None = Field(
        None, description="Address the proxies listen on (default: the url's host)."
    )
    proxy_ports: tuple[int, int] = Field(
        description="The two ports a proxy takes in turn: the live one and the next."
    )
    start: str = Field(description="Command that starts a proxy on {port} (reads config_path).")
    stop: str = Field(
        description="Command that stops the proxy on {port}: SIGTERM, then waits for it to exit."
    )
    graceful_shutdown: float = Field(
        30.0, gt=0, description="Seconds an old proxy may take to finish its requests."
    )

    @model_validator(mode="after")
    def _two_ports_and_placeholders(self) -> Self:
        if self.proxy_ports[0] == self.proxy_ports[1]:
            raise ValueError("proxy_ports must be two different ports")
        for name in ("start", "stop"):
            if "{port}" not in getattr(self, name):
                raise ValueError(f"{name} must contain {{port}}")
        return self


class Gateway(WithSettings):
    """desired/gateway.yaml: the gateway proxy (LiteLLM)."""

    model_config = ConfigDict(json_schema_extra=settings_schema(KIND_SETTINGS, "kind"))
    SETTINGS_TAG = ("kind", "litellm")
    SETTINGS_MODELS = KIND_SETTINGS
    SETTINGS_OF = "gateway"

    kind: str = Field("litellm", description="The proxy's kind (LiteLLM).")
    host: str = Field(description="Host the proxy runs on.")
    config_path: str = Field(description="LiteLLM config file on that host.")
    url: str = Field(description="URL clients use (the front's, if any); fleet verifies there.")
    master_key: str | None = Field(None, description="A ${ENV_VAR} reference, never a literal.")
    restart: GatewayRestart | None = Field(
        None, description="How to restart the proxy in place (a gateway without a front)."
    )
    front: GatewayFront | None = Field(
        None, description="A front (nginx): the proxy is then changed blue/green behind it."
    )
    fallbacks: dict[str, tuple[str, ...]] = Field(
        default_factory=dict, description="Alias -> aliases tried when it fails."
    )
    retired_aliases: tuple[str, ...] = Field((), description="Aliases to remove.")
    clients: dict[str, GatewayClient] = Field(
        default_factory=dict,
        description="Who may call which aliases, each with its own key (fleet.spec.clients).",
    )
    settings: SkipJsonSchema[SerializeAsAny[KindSettings]] = Field(
        default_factory=lambda: default_settings(KIND_SETTINGS, "litellm", KindSettings),
        description="The kind's own settings, read from the file's other keys.",
    )

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, value: str) -> str:
        return cls.known_backend(value)

    @model_validator(mode="after")
    def _restart_or_front(self) -> Self:
        if self.restart is None and self.front is None:
            raise ValueError("give restart (in place) or front (blue/green), or both")
        return self
