"""desired/hosts/<name>.yaml: a machine reached over SSH (`Host`), its GPUs and its runtime.

Part of the desired-state model (`fleet.spec.models`, which re-exports it). The keys that
are not the neutral ones are the host's runtime's (`fleet.spec.host_settings`).
"""

from typing import Annotated, Self

from pydantic import (
    ConfigDict,
    Field,
    SerializeAsAny,
    StringConstraints,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from fleet.base import CoreModel
from fleet.spec.host_settings import (
    RUNTIME_SETTINGS,
    RuntimeSettings,
    WithSettings,
    default_settings,
    settings_schema,
)
from fleet.spec.monitoring import Exporter
from fleet.units import ByteSize

ExporterName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_-]{0,31}$")]


class HostSsh(CoreModel):
    """How to reach a host: an ssh_config alias, or address, port and user."""

    alias: str | None = Field(None, description="Host entry in the ssh_config file.")
    address: str | None = Field(None, description="Address, when no alias is used.")
    port: int | None = Field(
        None, ge=1, le=65535, description="sshd port; beats ssh_config's Port [default 22]."
    )
    user: str | None = Field(None, description="Login user; beats ssh_config's User [root].")

    @model_validator(mode="after")
    def _alias_or_address(self) -> Self:
        if not self.alias and not self.address:
            raise ValueError("give either alias (an ssh_config Host) or address")
        return self


class GpuSpec(CoreModel):
    """One GPU of a host, as nvidia-smi names it."""

    index: int = Field(ge=0, description="nvidia-smi index.")
    name: str = Field(description="Model name as nvidia-smi prints it.")
    memory: ByteSize = Field(description="Total memory, e.g. 97887MiB.")


class Host(WithSettings):
    """desired/hosts/<name>.yaml: a machine reached over SSH, running its seats under a
    runtime (docker compose by default). The keys that are not these are the runtime's
    (`fleet.spec.host_settings`: compose's `compose_dir`, `gpu_handover`), read into
    `settings` by the model its runtime registered."""

    model_config = ConfigDict(json_schema_extra=settings_schema(RUNTIME_SETTINGS, "runtime"))
    SETTINGS_TAG = ("runtime", "compose")
    SETTINGS_MODELS = RUNTIME_SETTINGS
    SETTINGS_OF = "host"

    name: str = Field(description="Host name; equals the file name.")
    ssh: HostSsh = Field(description="How to reach the host.")
    address: str = Field(description="Address the gateway uses to reach this host's seats.")
    publish_address: str = Field("0.0.0.0", description="Interface seat ports bind on.")
    gpus: tuple[GpuSpec, ...] = Field((), description="The host's GPUs.")
    runtime: str = Field(
        "compose",
        description="How the host runs its seats: compose (docker compose), or systemd "
        "(a unit per seat; a seat's image is then the engine's executable).",
    )
    models_root: str = Field("/models", description="Directory of model directories.")
    state_dir: str | None = Field(
        None,
        description="Directory of fleet's apply lock and journal on the host [the runtime's: "
        "compose_dir on a compose host, /srv/fleet otherwise].",
    )
    exporters: dict[ExporterName, Exporter] = Field(
        default_factory=dict,
        description="Metrics exporters the host runs (node, dcgm, ...): name -> {port, path}.",
    )
    settings: SkipJsonSchema[SerializeAsAny[RuntimeSettings]] = Field(
        default_factory=lambda: default_settings(RUNTIME_SETTINGS, "compose", RuntimeSettings),
        description="The runtime's own settings, read from the file's other keys.",
    )

    @field_validator("runtime")
    @classmethod
    def _known_runtime(cls, value: str) -> str:
        return cls.known_backend(value)

    @property
    def apply_state_dir(self) -> str:
        """Where fleet keeps the host's apply lock and journal."""
        return self.state_dir or self.settings.default_state_dir()
