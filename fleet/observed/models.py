"""What observation found on the live fleet: hosts, GPUs, containers, models, gateway.

Built by `fleet.observed.assemble` from the fact script's output (one host at a time) and
by `reconciler.workflows.observe` for the gateway; read by findings, diff, plan and the inventory.
Everything here is a fact read off a host; nothing is typed by hand.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from operator import is_
from types import MappingProxyType
from typing import Any, Literal

from pydantic import Field, PrivateAttr

from fleet.base import CoreModel
from fleet.engines import concurrency
from fleet.engines.report import EngineReport
from fleet.facts.client_keys import KeyFile
from fleet.facts.engine_metrics import EngineLoad
from fleet.facts.gguf import GgufFacts
from fleet.facts.instance import Instance
from fleet.facts.model_config import ModelFacts
from fleet.facts.model_files import DiskFree, ModelFile, SourceListing
from fleet.facts.provenance import RecordedFile
from fleet.names import COMPOSE_SERVICE_LABEL, hand_seat_name
from fleet.observed.gateway_config import GatewayConfig
from fleet.observed.targets import ObservedTargets


class ObservedGpu(CoreModel):
    """One GPU as nvidia-smi reports it."""

    index: int
    uuid: str
    name: str
    memory_total_mib: int
    memory_used_mib: int
    missing: tuple[str, ...] = ()  # columns its nvidia-smi row lacks (a vGPU guest's table)

    @property
    def memory_free_mib(self) -> int:
        """Memory not in use."""
        return max(self.memory_total_mib - self.memory_used_mib, 0)


class GpuProcessUse(CoreModel):
    """A compute process on a GPU, mapped to its container through /proc/<pid>/cgroup."""

    pid: int
    gpu_index: int | None
    used_mib: int
    container_id: str | None = Field(None, description="None: the process is in no container")


class ModelInfo(CoreModel):
    """Facts about a model directory: config.json summary, size on disk, lineage."""

    path: str
    size_bytes: int | None = None
    architecture: str | None = None
    model_type: str | None = None
    num_layers: int | None = None
    num_experts: int | None = None
    num_experts_per_token: int | None = None
    attention: str | None = None
    quantization: str | None = None
    max_position_embeddings: int | None = None
    kv_bytes_per_token: int | None = None
    kv_fixed_bytes: int = Field(
        0,
        description="KV bytes each sequence holds whatever its context (a GGUF's sliding-"
        "window layers at their window, linear-attention layers' state)",
    )
    lineage: dict[str, str] = Field(default_factory=dict)
    config_error: str | None = None
    facts: ModelFacts | None = Field(None, description="the parsed config.json, for prediction")
    gguf: GgufFacts | None = Field(None, description="a GGUF file's header, for prediction")
    files: dict[str, ModelFile] | None = Field(None, description="its files (find), by path")
    recorded: dict[str, RecordedFile] | None = Field(
        None, description="the files fleet recorded in its provenance when it fetched it"
    )
    digests: dict[str, str] = Field(
        default_factory=dict, description="sha256 of files hashed again at this observation"
    )


class ObservedSeat(CoreModel):
    """An instance running (or meant to run) an engine, with everything known about it: a
    container on a compose host, a unit on a systemd host (its runtime's `INSTANCE`)."""

    name: str = Field(description="fleet.seat label, or the instance's name if unmanaged")
    managed: bool
    instance: Instance = Field(
        description="what the host's runtime runs the seat as (a container, a unit)"
    )
    engine_name: str | None = Field(None, description="the engine its process runs, if any")
    served_names: tuple[str, ...] = ()
    model: str | None = None
    port: int | None = None
    max_model_len: int | None = None
    kv_cache_bytes: int | None = None
    gpu_memory_utilization: float | None = None
    tensor_parallel_size: int | None = None
    parallel_slots: int | None = Field(None, description="llama.cpp: parallel slots")
    speculative: dict[str, object] | None = None
    extra_args: tuple[str, ...] = ()
    gpus: tuple[int, ...] = Field((), description="GPUs its processes hold (nvidia-smi)")
    vram_mib: int = 0
    engine: EngineReport | None = None
    exit_reason: str | None = Field(
        None, description="why its process is not running, as its runtime says (SIGTERM, ...)"
    )
    out_of_memory: str | None = Field(
        None, description="why it ran short of memory, the exit reason read before its log"
    )
    definition: dict[str, Any] | None = Field(
        None,
        description="its definition as fleet last wrote it on the host (a compose service, a unit)",
    )

    @property
    def hand_name(self) -> str:
        """The seat name of an instance fleet did not create (compose service, or name)."""
        raw = self.instance.labels.get(COMPOSE_SERVICE_LABEL) or self.instance.name
        return hand_seat_name(raw)

    @property
    def concurrency(self) -> float | None:
        """How many full-context requests fit at once, from the engine's own log: vLLM's
        `Maximum concurrency` where it states one, else KV-cache tokens / context."""
        if self.engine and self.engine.max_concurrency:
            return self.engine.max_concurrency  # vLLM's own figure, right for hybrid models too
        tokens = self.engine.kv_cache_tokens if self.engine else None
        context = self.max_model_len or (self.engine.max_model_len if self.engine else None)
        return concurrency(tokens, context)


class _Memo:
    """A lookup index riding on a frozen model, beside what it was built from.

    Never part of the model's value: every memo equals every other, so models still
    compare by their fields. A copy (`model_copy`) shares its original's memo; comparing
    what the index was built from with the copy's own fields makes the copy rebuild it.
    """

    __slots__ = ("built",)

    def __init__(self) -> None:
        self.built: tuple[tuple[Any, ...], dict[str, Any]] = ((), {})

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Memo)

    def __hash__(self) -> int:
        return 0


class ObservedHost(CoreModel):
    """One host: reachable or not, its GPUs, seats, GPU processes and models."""

    name: str
    reachable: bool = True
    error: str | None = None
    gpu_error: str | None = None
    runtime: str | None = Field(None, description="the runtime its seats were read under")
    runtime_error: str | None = Field(None, description="its runtime did not answer (why)")
    gpus: tuple[ObservedGpu, ...] = ()
    processes: tuple[GpuProcessUse, ...] = ()
    seats: tuple[ObservedSeat, ...] = ()
    models: dict[str, ModelInfo] = Field(default_factory=dict)
    missing_paths: tuple[str, ...] = ()
    disk: DiskFree | None = Field(None, description="the models root's filesystem (df)")
    sources: dict[str, SourceListing] = Field(
        default_factory=dict, description="absent model paths: their source, as the host sees it"
    )
    partials: dict[str, int] = Field(
        default_factory=dict, description="fetches' temporary paths in the models root: bytes"
    )
    lock: str | None = Field(None, description="who holds the apply lock, if anyone")
    lock_gone_pid: int | None = Field(
        None, description="the lock's holder ran on this machine, and this pid of it is gone"
    )
    interrupted: tuple[str, ...] = Field((), description="steps of an unfinished apply")
    memory_total_mib: int | None = Field(None, description="RAM, from /proc/meminfo")
    memory_available_mib: int | None = Field(None, description="RAM available for new work")
    cpu_amx: bool | None = Field(None, description="the CPU has AMX (/proc/cpuinfo flags)")
    applied_commit: str | None = Field(None, description="desired/ commit of the last apply")
    applied_at: str | None = Field(None, description="when that apply finished")
    gateway_restart_seconds: float | None = Field(
        None, description="how long the last in-place gateway restart on this host took"
    )
    seat_start_seconds: dict[str, float] = Field(
        default_factory=dict, description="seat -> how long its last start here took (s)"
    )
    loads: dict[int, EngineLoad] = Field(
        default_factory=dict,
        description="port -> the engine's own gauges there (read only for `fleet status`)",
    )

    _by_name: _Memo = PrivateAttr(default_factory=_Memo)

    def adoptable(self, name: str) -> ObservedSeat | None:
        """An engine container fleet did not create that `fleet import` would name `name`."""
        return next(
            (s for s in self.seats if not s.managed and s.engine_name and s.hand_name == name),
            None,
        )

    def seat(self, name: str) -> ObservedSeat | None:
        """The managed seat of that name, if it runs here (the first, if twice)."""
        source, index = self._by_name.built
        if source is not self.seats:
            index = {}
            for seat in self.seats:
                if seat.managed:
                    index.setdefault(seat.name, seat)
            self._by_name.built = (self.seats, index)
        found: ObservedSeat | None = index.get(name)
        return found


class BackendProbe(CoreModel):
    """Whether a gateway backend answered from the gateway host, and what it serves."""

    api_base: str
    answers: bool
    models: tuple[str, ...] = ()
    error: str | None = None


_API_PORT = re.compile(r"^https?://[^/]+:(\d+)(?:/|$)")


class ServedGateway(CoreModel):
    """What the gateway serves, as asked from the gateway host: through its URL (the
    front, if it has one) and on each proxy port; the config file is only its intention."""

    url_answers: bool = Field(description="the gateway's URL answered a model list")
    url_error: str | None = None
    routes: dict[str, str | None] | None = Field(
        None, description="alias -> api_base served through the URL (None: not readable)"
    )
    front_port: int | None = Field(None, description="the proxy port the front's file names")
    proxies: dict[int, tuple[str, ...]] = Field(
        default_factory=dict, description="proxy port -> the aliases it lists (those running)"
    )


class ObservedKeys(CoreModel):
    """The gateway's key check as its host has it: the key file (hashes, never a key)
    and whether the auth module beside the config is the one fleet ships."""

    file: KeyFile | None = Field(None, description="the key file; None: there is none")
    error: str | None = Field(None, description="why the key file could not be read")
    module: Literal["current", "stale", "missing"] = "missing"


class ObservedClient(CoreModel):
    """Where a client's key was delivered, as read there: its hash, never the key."""

    name: str
    where: str
    reachable: bool = True
    error: str | None = None
    delivered: str | None = Field(None, description="sha256 of the delivered key; None: none")


class ObservedGateway(CoreModel):
    """The gateway's config file and its backends as the gateway host reaches them."""

    host: str
    config_path: str
    reachable: bool = True
    error: str | None = None
    config_text: str | None = None
    config: GatewayConfig | None = None
    probes: dict[str, BackendProbe] = Field(default_factory=dict)
    served: ServedGateway | None = None
    keys: ObservedKeys | None = Field(None, description="its key check (clients declared)")

    _by_seat: _Memo = PrivateAttr(default_factory=_Memo)

    def routed_ports(self, seat: str) -> set[int]:
        """The ports the gateway routes this seat's aliases to: as served when the proxy
        says, else as its config file says (the entries indexed by seat once per config)."""
        if self.config is None:
            return set()
        source, index = self._by_seat.built
        if not source or source[0] is not self.config:
            index = {}
            for entry in self.config.entries:
                if entry.seat is not None and entry.address:
                    index.setdefault(entry.seat, []).append(entry)
            self._by_seat.built = ((self.config,), index)
        entries = index.get(seat, [])
        served = self.served.routes if self.served and self.served.routes else None
        bases = [(served or {}).get(e.alias) or e.address for e in entries]
        return {port for base in bases if (port := _port(base)) is not None}


def _port(api_base: str | None) -> int | None:
    match = _API_PORT.match(api_base or "")
    return int(match.group(1)) if match else None


class Observation(CoreModel):
    """The whole live fleet at one moment."""

    observed_at: str
    hosts: dict[str, ObservedHost] = Field(default_factory=dict)
    gateway: ObservedGateway | None = None
    clients: dict[str, ObservedClient] = Field(
        default_factory=dict, description="each reachable client's delivered key, as a hash"
    )
    targets: ObservedTargets | None = None

    @property
    def live_commit(self) -> str | None:
        """The desired/ commit the newest finished apply on any host made live."""
        applied = [h for h in self.hosts.values() if h.applied_commit]
        newest = max(applied, key=lambda h: (h.applied_at or "", h.name), default=None)
        return newest.applied_commit if newest else None

    _by_name: _Memo = PrivateAttr(default_factory=_Memo)

    def seat(self, name: str) -> tuple[ObservedHost, ObservedSeat] | None:
        """Where a managed seat runs, if anywhere (the first host in order, if on two)."""
        return self.seat_index().get(name)

    def seat_index(self) -> Mapping[str, tuple[ObservedHost, ObservedSeat]]:
        """`seat` of every managed seat, for a caller that asks of every seat.

        An index built once per set of hosts; the identity check (cheap, in C) notices a
        host replaced in `hosts`, which is a plain dict, and builds the index anew.
        """
        hosts = tuple(self.hosts.values())
        source, index = self._by_name.built
        if len(source) != len(hosts) or not all(map(is_, source, hosts)):
            index = {}
            for host in hosts:
                for seat in host.seats:
                    if seat.managed and self._rather(seat, index.get(seat.name)):
                        index[seat.name] = (host, seat)
            self._by_name.built = (hosts, index)
        return MappingProxyType(index)

    def _rather(self, seat: ObservedSeat, than: tuple[ObservedHost, ObservedSeat] | None) -> bool:
        """Of two copies of one seat, the running one the gateway routes to wins."""
        if than is None:
            return True
        routed = self.gateway.routed_ports(seat.name) if self.gateway else set()
        old = than[1]
        return (seat.instance.running, seat.port in routed) > (
            old.instance.running,
            old.port in routed,
        )

    _copies: _Memo = PrivateAttr(default_factory=_Memo)

    def copies(self, name: str) -> list[tuple[ObservedHost, ObservedSeat]]:
        """Every running managed copy of a seat (two after an interrupted surge)."""
        return list(self.copies_index().get(name, ()))

    def copies_index(self) -> Mapping[str, tuple[tuple[ObservedHost, ObservedSeat], ...]]:
        """`copies` of every seat that runs, indexed once per set of hosts as `seat_index` is."""
        hosts = tuple(self.hosts.values())
        source, index = self._copies.built
        if len(source) != len(hosts) or not all(map(is_, source, hosts)):
            found: dict[str, list[tuple[ObservedHost, ObservedSeat]]] = {}
            for host in hosts:
                for seat in host.seats:
                    if seat.managed and seat.instance.running:
                        found.setdefault(seat.name, []).append((host, seat))
            index = {name: tuple(copies) for name, copies in found.items()}
            self._copies.built = (hosts, index)
        return MappingProxyType(index)
