"""The desired-state model: what operators write in desired/ and review in pull requests.

`DesiredFleet` is the whole of desired/: fleet-wide settings, hosts, seats and the gateway.
Every model is strict (`extra="forbid"`) and frozen; field descriptions feed `fleet schema`.
Cross-file rules (a seat's host exists, aliases are unique, ...) live in `validate`.
"""

from __future__ import annotations

from typing import Any, Literal

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
from fleet.spec.host_settings import (
    KIND_SETTINGS,
    RUNTIME_SETTINGS,
    KindSettings,
    RuntimeSettings,
    settings_schema,
    unknown_runtime,
    with_settings,
)
from fleet.spec.model_origin import ModelOrigin, ModelStore, path_or_mapping, split_model_mapping
from fleet.units import ByteSize, Seconds


class ConcurrencyBand(CoreModel):
    """Accepted range of KV-cache tokens / context length for a seat."""

    min: float = Field(description="Lowest acceptable concurrency, e.g. 1.2 (x).")
    max: float = Field(description="Highest acceptable concurrency, e.g. 2.5 (x).")


class InventorySettings(CoreModel):
    """Where the generated inventory goes."""

    path: str = Field("inventory/INVENTORY.md", description="Markdown path, repo-relative.")


class ComposeSettings(CoreModel):
    """How compose projects are named on the hosts."""

    project_prefix: str = Field(
        "fleet",
        pattern=r"^[a-z0-9][a-z0-9_-]{0,31}$",
        description="Project name is <prefix>-<host>: lowercase letters, digits, '_' and '-'.",
    )


class ImagePolicy(CoreModel):
    """Image pinning policy."""

    floating_tags: tuple[str, ...] = Field(
        ("latest",), description="Tags that float and are therefore errors."
    )
    digest: Literal["error", "warn", "ignore"] = Field(
        "warn", description="What a tag without @sha256 digest is."
    )


class SshSettings(CoreModel):
    """SSH client settings shared by all hosts."""

    config_file: str | None = Field(
        None,
        description="Only ~/.ssh/config, the default: the ssh_config comes from the "
        "operator's environment ($FLEET_SSH_CONFIG, else ~/.ssh/config), never desired/.",
    )


class DenyWindow(CoreModel):
    """A time the reconcile loop changes nothing (UTC): `{days: [sat, sun], start: "00:00",
    end: "23:59"}`; `end` before `start` runs past midnight."""

    days: tuple[Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"], ...] = Field(
        ("mon", "tue", "wed", "thu", "fri", "sat", "sun"), description="Days it applies on."
    )
    start: str = Field(pattern=r"^([01]\d|2[0-3]):[0-5]\d$", description="HH:MM, UTC.")
    end: str = Field(pattern=r"^([01]\d|2[0-3]):[0-5]\d$", description="HH:MM, UTC.")


class BenchSettings(CoreModel):
    """The loop's `fleet bench` of each seat, judged against BENCH.json, never committed."""

    interval: Seconds = Field(300.0, ge=1, description="How often: 30s, 5m, 1h or seconds.")
    via: Literal["seat", "gateway"] = Field("gateway", description="By first alias, or port.")
    depth: bool = Field(False, description="Also the deep prefill probe (~0.97x the context).")


class ReconcileSettings(CoreModel):
    """How `fleet reconcile` behaves (the GitOps loop)."""

    suspend: bool = Field(False, description="Observe and report, change nothing.")
    deny_windows: tuple[DenyWindow, ...] = Field((), description="Times it changes nothing.")
    webhook_url: str | None = Field(None, description="A ${ENV_VAR} URL for JSON events.")
    stuck_after: int = Field(
        120, ge=10, description="Seconds with requests but no token before a restart."
    )
    retries: int = Field(3, ge=0, description="Apply retries of a failing commit.")
    backoff: float = Field(
        30.0, ge=1, description="Seconds before the first retry; doubled each time, 30 min at most."
    )
    bench: BenchSettings | None = Field(None, description="Measure every seat on a schedule.")


class FleetSettings(CoreModel):
    """desired/fleet.yaml: fleet-wide defaults."""

    name: str = Field("fleet", description="A name for this fleet, used in commit messages.")
    concurrency_band: ConcurrencyBand = Field(
        ConcurrencyBand(min=1.2, max=2.5), description="Default band for every seat."
    )
    inventory: InventorySettings = InventorySettings()
    compose: ComposeSettings = ComposeSettings()
    images: ImagePolicy = ImagePolicy()
    ssh: SshSettings = SshSettings()
    reconcile: ReconcileSettings = ReconcileSettings()
    stores: dict[str, ModelStore] = Field(
        default_factory=dict, description="Model stores seats' `model.source` names."
    )


class HostSsh(CoreModel):
    """How to reach a host: an ssh_config alias, or address, port and user."""

    alias: str | None = Field(None, description="Host entry in the ssh_config file.")
    address: str | None = Field(None, description="Address, when no alias is used.")
    port: int | None = Field(
        None, ge=1, le=65535, description="sshd port; beats ssh_config's Port [default 22]."
    )
    user: str | None = Field(None, description="Login user; beats ssh_config's User [root].")

    @model_validator(mode="after")
    def _alias_or_address(self) -> HostSsh:
        if not self.alias and not self.address:
            raise ValueError("give either alias (an ssh_config Host) or address")
        return self


class GpuSpec(CoreModel):
    """One GPU of a host, as nvidia-smi names it."""

    index: int = Field(ge=0, description="nvidia-smi index.")
    name: str = Field(description="Model name as nvidia-smi prints it.")
    memory: ByteSize = Field(description="Total memory, e.g. 97887MiB.")


class Host(CoreModel):
    """desired/hosts/<name>.yaml: a machine reached over SSH, running its seats under a
    runtime (docker compose by default). The keys that are not these are the runtime's
    (`fleet.spec.host_settings`: compose's `compose_dir`, `gpu_handover`), read into
    `settings` by the model its runtime registered."""

    model_config = ConfigDict(json_schema_extra=settings_schema(RUNTIME_SETTINGS, "runtime"))

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
    settings: SkipJsonSchema[SerializeAsAny[RuntimeSettings]] = Field(
        default_factory=lambda: RUNTIME_SETTINGS["compose"](),
        description="The runtime's own settings, read from the file's other keys.",
    )

    @model_validator(mode="before")
    @classmethod
    def _runtime_settings(cls, data: Any) -> Any:
        neutral = set(cls.model_fields) - {"settings"}
        return with_settings(data, neutral, RUNTIME_SETTINGS, "host", ("runtime", "compose"))

    @field_validator("runtime")
    @classmethod
    def _known_runtime(cls, value: str) -> str:
        if value not in RUNTIME_SETTINGS:
            raise unknown_runtime(value)
        return value

    @property
    def apply_state_dir(self) -> str:
        """Where fleet keeps the host's apply lock and journal."""
        return self.state_dir or self.settings.default_state_dir()


class Speculative(CoreModel):
    """Speculative decoding of a seat, rendered as its engine takes it."""

    method: str = Field(description="vLLM method, e.g. mtp, qwen3_5_mtp, eagle3, dflash, ngram.")
    num_tokens: int = Field(description="Speculative tokens per step (k).")
    draft_model: str | None = Field(None, description="Drafter path, for methods that need one.")


class Seat(CoreModel):
    """desired/seats/<name>.yaml: one engine container serving one model."""

    name: str = Field(description="Seat name; equals the file name.")
    host: str = Field(description="Host the seat runs on.")
    gpus: tuple[int, ...] = Field(
        description="GPU indices; >1 is tensor parallel; [] runs on the CPU "
        "(llama.cpp, vLLM's CPU build)."
    )
    engine: str = Field(
        "vllm", description="Engine kind: one of fleet's engine modules (vllm, llama.cpp, ...)."
    )
    image: str = Field(description="Image reference, pinned: repo:tag[@sha256:digest].")
    model: str = Field(
        description="Model directory (or GGUF file) on the host, or {path, source, ...}.",
        json_schema_extra=path_or_mapping,
    )
    model_origin: SkipJsonSchema[ModelOrigin | None] = Field(
        None, description="Written as `model: {path, source, ...}`: how to fetch it."
    )
    served_name: str = Field(description="Name the engine serves the model under.")
    context: int = Field(description="Context length (max model len) in tokens.")
    kv_cache_bytes: ByteSize | None = Field(None, description="KV-cache budget per GPU.")
    gpu_memory_utilization: float | None = Field(
        None, description="Fraction of GPU memory for the engine (instead of kv_cache_bytes)."
    )
    concurrency_band: ConcurrencyBand | None = Field(
        None, description="Overrides the fleet's band."
    )
    tensor_parallel_size: int | None = Field(
        None, description="Must equal the number of GPUs; implied when omitted."
    )
    parallel: int | None = Field(
        None,
        ge=1,
        description="llama.cpp: parallel slots, each holding `context` tokens; "
        "the KV cache is sized context x parallel [1].",
    )
    speculative: Speculative | None = Field(None, description="Speculative decoding.")
    port: int = Field(ge=1, le=65535, description="Port the engine listens on.")
    strategy: Literal["auto", "surge", "recreate"] = Field(
        "auto",
        description="How a change replaces the seat: surge (the new copy starts beside the "
        "old on the second port, the gateway moves, the old drains), recreate (stop, then "
        "start), auto (surge when plan predicts both copies fit on the seat's GPUs).",
    )
    handoff: bool = Field(
        True,
        description="Whether a recreate may hand the seat's aliases to their gateway "
        "fallbacks while it loads (false: a different model must never answer for it; its "
        "aliases are down while it loads).",
    )
    surge_port: int | None = Field(
        None, ge=1, le=65535, description="The second port a surge alternates to [port + 1000]."
    )
    aliases: tuple[str, ...] = Field((), description="Gateway aliases routed to this seat.")
    extra_args: tuple[str, ...] = Field((), description="Engine arguments passed verbatim.")
    env: dict[str, str] = Field(default_factory=dict, description="Container environment.")

    @model_validator(mode="before")
    @classmethod
    def _model_mapping(cls, data: Any) -> Any:
        return split_model_mapping(data)

    def band(self, default: ConcurrencyBand) -> ConcurrencyBand:
        """The band this seat is held to."""
        return self.concurrency_band or default

    @property
    def tp_size(self) -> int:
        """How many ranks the engine splits the model over: its GPUs, one on the CPU."""
        return max(len(self.gpus), 1)

    @property
    def second_port(self) -> int:
        """The port a surge starts the new copy on (and the next surge leaves)."""
        return self.surge_port if self.surge_port is not None else self.port + 1000


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
    def _exactly_one(self) -> GatewayRestart:
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
    def _two_ports_and_placeholders(self) -> GatewayFront:
        if self.proxy_ports[0] == self.proxy_ports[1]:
            raise ValueError("proxy_ports must be two different ports")
        for name in ("start", "stop"):
            if "{port}" not in getattr(self, name):
                raise ValueError(f"{name} must contain {{port}}")
        return self


class Gateway(CoreModel):
    """desired/gateway.yaml: the gateway proxy (LiteLLM)."""

    model_config = ConfigDict(json_schema_extra=settings_schema(KIND_SETTINGS, "kind"))

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
    settings: SkipJsonSchema[SerializeAsAny[KindSettings]] = Field(
        default_factory=lambda: KIND_SETTINGS["litellm"](),
        description="The kind's own settings, read from the file's other keys.",
    )

    @model_validator(mode="before")
    @classmethod
    def _kind_settings(cls, data: Any) -> Any:
        neutral = set(cls.model_fields) - {"settings"}
        return with_settings(data, neutral, KIND_SETTINGS, "gateway", ("kind", "litellm"))

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, value: str) -> str:
        if value not in KIND_SETTINGS:
            raise unknown_runtime(value, KIND_SETTINGS)
        return value

    @model_validator(mode="after")
    def _restart_or_front(self) -> Gateway:
        if self.restart is None and self.front is None:
            raise ValueError("give restart (in place) or front (blue/green), or both")
        return self


SECOND_COPY = "-b"  # the instance name of a seat serving on its second port


class DesiredFleet(CoreModel):
    """The whole of desired/."""

    settings: FleetSettings = FleetSettings()
    hosts: dict[str, Host] = Field(default_factory=dict)
    seats: dict[str, Seat] = Field(default_factory=dict)
    gateway: Gateway | None = None
    live_on_second: frozenset[str] = Field(
        default_factory=frozenset,
        description="Seats whose live copy serves on its second port (a surge moved it "
        "there): set from what runs (`fleet.plan.live_port`), never by desired/.",
    )

    def seats_on(self, host: str) -> list[Seat]:
        """Seats of one host, sorted by name."""
        return sorted((s for s in self.seats.values() if s.host == host), key=lambda s: s.name)

    def seats_by_host(self) -> dict[str, list[Seat]]:
        """`seats_on` of every host with seats, in one pass over the seats (asking
        `seats_on` host after host scans the whole fleet each time)."""
        by_host: dict[str, list[Seat]] = {}
        for seat in sorted(self.seats.values(), key=lambda s: s.name):
            by_host.setdefault(seat.host, []).append(seat)
        return by_host

    def instance_name(self, seat: str) -> str:
        """The seat's instance (compose service): its name, `<name>-b` on its second port."""
        return f"{seat}{SECOND_COPY}" if seat in self.live_on_second else seat

    def flipped(self, seat: str) -> DesiredFleet:
        """This fleet with the seat on its other port, as a surge of it leaves it."""
        was = self.seats[seat]
        moved = was.model_copy(update={"port": was.second_port, "surge_port": was.port})
        return self.model_copy(
            update={
                "seats": {**self.seats, seat: moved},
                "live_on_second": self.live_on_second ^ {seat},
            }
        )
