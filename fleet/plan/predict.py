"""Predictions for a seat before anything starts: its KV tokens, concurrency and GPU memory.

The data (`Prediction`) and the figures of one seat (`basis`, `kv_tokens`, `kv_budget`,
`footprint_mib`); `fleet.plan.fit` puts the seat among the others on its GPUs, makes the
prediction every seat action carries (`fleet.plan.plan`) and sizes budgets for
`fleet.plan.blockers` and `fleet fit`. Pure: desired/ and one read-only `Observation` in.

Each figure says where it came from. `exact`: a startup log on the host ran the same model
with the same KV budget, tensor parallel size, KV dtype and speculative decoding
(`fleet.plan.exact_log`), so its logged KV tokens are reused. `estimate`: from
config.json, laid out as vLLM lays out its KV cache (`fleet.plan.seat_layout`);
with only the summary observation keeps of config.json (`ModelInfo.kv_bytes_per_token`)
models whose layers all cache every token.
A llama.cpp seat is sized from its GGUF header instead (`fleet.engines.predict_memory`:
weights, KV cache, compute and output buffers on its GPU, or in its host's RAM).
A `gpu_memory_utilization` budget is what the fraction leaves after the weights (logged by
a seat of the same model, else the size on disk) and a fixed engine overhead. A fact that
cannot be read is named in `unknown`, never guessed.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field

from fleet.base import CoreModel
from fleet.engines import EngineMemory, engine_for, predict_memory, sizes_from_header
from fleet.engines.kv import KvSettings
from fleet.engines.report import EngineReport
from fleet.facts.kv_estimate import GIB, KvLayout, kv_dtype_bytes, uniform_layout
from fleet.facts.model_config import ModelFacts
from fleet.observed.models import ModelInfo, Observation, ObservedHost
from fleet.plan.exact_log import exact_log
from fleet.plan.seat_layout import log_layout as log_layout
from fleet.plan.seat_layout import seat_layout
from fleet.spec.models import ConcurrencyBand, DesiredFleet, Seat
from fleet.units import format_bytes

MIB = 1024**2
ENGINE_OVERHEAD_MIB = 1024  # CUDA context, activations and graphs beside weights and KV
# What a utilization fraction spends beside weights and KV, for sizing KV from a fraction:
# CUDA context and activations, ~0.4 GiB plus 2% of the weights (a 1.5B model at 0.055 of
# 96 GiB logged 4.70x at 16,384 tokens: ~0.33 GiB beside its weights and KV).
FRACTION_OVERHEAD_MIB = 400


class PredictionSource(StrEnum):
    """Where a predicted figure came from."""

    EXACT = "exact"
    ESTIMATE = "estimate"


class GpuMemory(CoreModel):
    """One GPU once the plan ran: what every seat on it will hold, this one included."""

    used_mib: int
    total_mib: int


class Prediction(CoreModel):
    """What a seat will get when its engine starts, said before it starts."""

    kv_cache_bytes: int | None = Field(None, description="per-GPU KV budget the figures assume")
    kv_tokens: int | None = Field(None, description="the engine's `GPU KV cache size`")
    concurrency: float | None = Field(None, description="KV tokens / context")
    max_concurrency: float | None = Field(
        None,
        description="the engine's `Maximum concurrency` at the seat's context, what the band "
        "judges (not tokens / context for sliding-window and hybrid models)",
    )
    context: int | None = Field(None, description="the context the concurrency is for")
    source: PredictionSource | None = Field(None, description="exact (a log) or estimate")
    band: ConcurrencyBand
    max_model_len: int | None = Field(None, description="most context config.json allows")
    gpu_memory: dict[int, GpuMemory] = Field(default_factory=dict)
    memory: EngineMemory | None = Field(
        None, description="a llama.cpp seat's buffers, from its GGUF header"
    )
    ram: str | None = Field(
        None, description="a CPU seat's RAM as plan counts it (an engine not sized by header)"
    )
    unknown: tuple[str, ...] = Field((), description="facts that could not be read")
    assumptions: tuple[str, ...] = Field(
        (), description="defaults of the engine's release and platform that moved an estimate"
    )

    @property
    def band_concurrency(self) -> float | None:
        """What the band judges: the engine's `Maximum concurrency`, else tokens / context."""
        return self.max_concurrency if self.max_concurrency is not None else self.concurrency

    def describe(self) -> str:
        """`KV 24GiB -> ~205,700 tokens, max concurrency 1.57x at 131,072 (band
        1.2x..2.5x), estimate`, with the assumptions that moved an estimate after it
        (`estimate (block 128 (CPU), prefill chunk 2048)`)."""
        band = f"band {self.band.min:g}x..{self.band.max:g}x"
        kv = "KV" if self.kv_cache_bytes is None else f"KV {size_text(self.kv_cache_bytes)}"
        concurrency = self.band_concurrency
        if self.kv_tokens is None or concurrency is None:
            return f"{kv}: KV tokens cannot be predicted ({band})"
        exact = self.source is PredictionSource.EXACT
        tokens = f"{self.kv_tokens:,}" if exact else f"~{_rounded(self.kv_tokens):,}"
        at = f" at {self.context:,}" if self.context else ""
        source = str(self.source)
        if self.assumptions and not exact:
            source += f" ({', '.join(self.assumptions)})"
        return f"{kv} -> {tokens} tokens, max concurrency {concurrency:.2f}x{at} ({band}), {source}"


class Basis(CoreModel):
    """What a seat's figures rest on, read off its host's observation."""

    layout: KvLayout | None = None
    exact: EngineReport | None = Field(None, description="the log of this configuration")
    weights_mib: int | None = None
    total_mib: int | None = Field(
        None, description="the smallest of the seat's GPUs (a CPU seat: the host's memory)"
    )
    max_model_len: int | None = None
    max_model_len_source: str | None = None
    memory: EngineMemory | None = Field(None, description="a llama.cpp seat's buffers")
    unknown: tuple[str, ...] = ()

    @property
    def source(self) -> PredictionSource | None:
        """exact when a log is reused, estimate when a layout is known."""
        if self.exact is not None:
            return PredictionSource.EXACT
        return PredictionSource.ESTIMATE if self.layout is not None else None


def size_text(size: int | None) -> str:
    """`10GiB`, `24.1GiB`, `?`: a byte size as a reviewer reads it."""
    if size is None:
        return "?"
    if size % GIB == 0:
        return format_bytes(size)
    return f"{size / GIB:.1f}GiB" if size >= GIB else f"{round(size / MIB):,}MiB"


def _rounded(tokens: int) -> int:
    """Three significant digits: an estimate does not pretend to more."""
    digits = max(len(str(tokens)) - 3, 0)
    return round(tokens, -digits)


def model_facts(info: ModelInfo | None) -> ModelFacts | None:
    """The parsed config.json behind a ModelInfo, where observation keeps it (`facts`)."""
    return info.facts if info is not None else None


def basis(desired: DesiredFleet, observation: Observation, seat: Seat) -> Basis:
    """Everything the seat's prediction needs from its host, or why it is missing."""
    host = observation.hosts.get(seat.host)
    if host is None or not host.reachable:
        return Basis(unknown=(f"host {seat.host} is not observed",))
    path = seat.model.rstrip("/")
    info = host.models.get(path)
    total, gpu_note = _total_mib(desired, host, seat)
    unknown = [gpu_note] if gpu_note else []
    missing = path in host.missing_paths or info is None
    if sizes_from_header(seat.engine):
        return _header_basis(host, seat, info if not missing else None, total, unknown)
    facts = model_facts(info)
    layout, why = _layout(host, seat, info, facts, _first_gpu(desired, host, seat))
    if missing:
        why = f"model {seat.model} is not on {seat.host}"
    unknown += [why] if why else []
    return Basis(
        layout=layout,
        exact=exact_log(host, seat, total),
        weights_mib=_weights_mib(host, seat, info),
        total_mib=total,
        max_model_len=facts.max_model_len if facts else None,
        max_model_len_source=facts.max_model_len_source if facts else None,
        unknown=tuple(unknown),
    )


def _header_basis(
    host: ObservedHost, seat: Seat, info: ModelInfo | None, total: int | None, notes: list[str]
) -> Basis:
    """A seat whose engine's buffers are sized from its GGUF header (llama.cpp)."""
    memory = llama_memory(host, seat, info)
    if info is None:
        notes.append(f"model {seat.model} is not on {seat.host}")
    elif memory is None:
        notes.append(f"the GGUF header of {seat.model} is too thin to size its buffers")
    return Basis(memory=memory, total_mib=total, unknown=tuple(notes))


def llama_memory(host: ObservedHost, seat: Seat, info: ModelInfo | None) -> EngineMemory | None:
    """A llama.cpp seat's buffers from its GGUF header (`fleet.engines.predict_memory`):
    on its GPU, or in its host's RAM."""
    if info is None or info.gguf is None:
        return None
    if seat.gpus:
        where = f"GPU {', '.join(map(str, seat.gpus))}"
    else:
        available = host.memory_available_mib
        room = f" ({available:,} MiB available)" if available is not None else ""
        where = f"RAM of {host.name}{room}"
    return predict_memory(seat, info.gguf, info.size_bytes, where)


def kv_budget(basis: Basis, seat: Seat) -> int | None:
    """Per-GPU KV bytes: the seat's budget, or what its utilization fraction leaves."""
    if seat.kv_cache_bytes is not None:
        return seat.kv_cache_bytes
    if basis.exact is not None and basis.exact.kv_cache_gib is not None:
        return int(basis.exact.kv_cache_gib * GIB)
    fraction = seat.gpu_memory_utilization
    if fraction is None or basis.total_mib is None or basis.weights_mib is None:
        return None
    left = int(fraction * basis.total_mib) - basis.weights_mib - fraction_overhead_mib(basis)
    return max(left, 0) * MIB


def fraction_overhead_mib(basis: Basis) -> int:
    """What a utilization fraction holds beside the weights and the KV cache."""
    return FRACTION_OVERHEAD_MIB + (basis.weights_mib or 0) // 50


def footprint_mib(basis: Basis, seat: Seat) -> int | None:
    """What the seat's engine holds on each of its GPUs."""
    if basis.memory is not None:
        return basis.memory.footprint_mib() if basis.memory.gpu else None
    if seat.gpu_memory_utilization is not None and basis.total_mib is not None:
        return int(seat.gpu_memory_utilization * basis.total_mib)
    if seat.kv_cache_bytes is None or basis.weights_mib is None:
        return None
    return basis.weights_mib + seat.kv_cache_bytes // MIB + ENGINE_OVERHEAD_MIB


def kv_tokens(basis: Basis, seat: Seat) -> int | None:
    """The `GPU KV cache size` the engine will log."""
    if basis.exact is not None:
        return basis.exact.kv_cache_tokens
    budget = kv_budget(basis, seat)
    if basis.layout is None or budget is None:
        return None
    return basis.layout.tokens(budget, seat.context)


def max_concurrency(basis: Basis, seat: Seat) -> float | None:
    """vLLM's `Maximum concurrency` line at the seat's context: logged by a log of this
    configuration at that context, else from the layout (else the log's, scaled)."""
    exact, budget = basis.exact, kv_budget(basis, seat)
    if exact is not None and exact.max_model_len == seat.context and exact.max_concurrency:
        return exact.max_concurrency
    if exact is not None and basis.layout is None:  # the log's figure, scaled to the context
        if exact.max_concurrency is None or not exact.max_model_len:
            return None
        return round(exact.max_concurrency * exact.max_model_len / seat.context, 4)
    if basis.layout is None or budget is None:
        return None
    return round(basis.layout.max_concurrency(budget, seat.context), 4)


def _total_mib(desired: DesiredFleet, host: ObservedHost, seat: Seat) -> tuple[int | None, str]:
    if not seat.gpus:  # a CPU seat: the host's memory, from /proc/meminfo
        if host.memory_total_mib is None:
            return None, f"memory of {seat.host} is not known (/proc/meminfo not read)"
        return host.memory_total_mib, ""
    totals = [gpu_total_mib(desired, host, g) for g in seat.gpus]
    if None in totals:
        return None, f"GPU memory of {seat.host} GPU {list(seat.gpus)} is not known"
    return min(t for t in totals if t is not None), ""


def _first_gpu(
    desired: DesiredFleet, host: ObservedHost, seat: Seat
) -> tuple[int | None, str | None]:
    """The memory and name of the seat's first GPU (the device vLLM reads its defaults
    off); (None, None) for a CPU seat."""
    if not seat.gpus:
        return None, None
    index = seat.gpus[0]
    observed = [g.name for g in host.gpus if g.index == index and g.name]
    spec = desired.hosts.get(host.name)
    declared = [g.name for g in spec.gpus if g.index == index] if spec else []
    names = observed or declared
    return gpu_total_mib(desired, host, index), names[0] if names else None


def _layout(
    host: ObservedHost,
    seat: Seat,
    info: ModelInfo | None,
    facts: ModelFacts | None,
    device: tuple[int | None, str | None] = (None, None),
) -> tuple[KvLayout | None, str]:
    """The KV layout from config.json facts, else from the summary observation keeps."""
    settings = _kv_settings(seat)
    dtype, tp, pp = settings.dtype, seat.tp_size, settings.pipeline_parallel
    if facts is not None:
        draft = model_facts(_draft_info(host, seat))
        layout = seat_layout(seat, facts, draft, *device, amx=host.cpu_amx)
        return layout, "" if layout else f"config.json of {seat.model} is too thin to size KV"
    if info is None or info.kv_bytes_per_token is None:
        return None, f"no KV bytes per token known for {seat.model} (config.json not read)"
    element = kv_dtype_bytes(dtype)
    if info.attention not in ("full", "mla") or element is None:
        why = f"KV dtype {dtype}" if element is None else f"{info.attention or 'unknown'} attention"
        return None, f"cannot estimate KV of {why} from the config summary observed"
    per_token = info.kv_bytes_per_token * element // 2
    per_token //= tp if info.attention == "full" else 1
    if pp > 1 and info.num_layers:
        per_token = per_token * -(-info.num_layers // pp) // info.num_layers
    return uniform_layout(per_token), ""


def _kv_settings(seat: Seat) -> KvSettings:
    """What of the seat's engine flags changes its KV layout (dtype, pipeline size)."""
    return engine_for(seat.engine).kv_settings(seat.extra_args, None)


def _draft_info(host: ObservedHost, seat: Seat) -> ModelInfo | None:
    spec = seat.speculative
    return host.models.get(spec.draft_model.rstrip("/")) if spec and spec.draft_model else None


def _weights_mib(host: ObservedHost, seat: Seat, info: ModelInfo | None) -> int | None:
    """Per-GPU weights: logged by a seat of the same model and parallel layout, else on disk."""
    tp, pp = seat.tp_size, _kv_settings(seat).pipeline_parallel
    for live in sorted(host.seats, key=lambda s: (s.name != seat.name, s.name)):
        engine = live.engine
        same = (live.model or "").rstrip("/") == seat.model.rstrip("/")
        if same and engine and engine.weights_gib and (live.tensor_parallel_size or 1) == tp:
            return int(engine.weights_gib * 1024)
    if info is None or info.size_bytes is None:
        return None
    draft = _draft_info(host, seat)
    drafter = draft.size_bytes or 0 if draft else 0
    return (info.size_bytes + drafter) // (tp * pp) // MIB


def gpu_total_mib(desired: DesiredFleet, host: ObservedHost, index: int) -> int | None:
    """A GPU's memory as nvidia-smi reports it, else as the host's file declares it."""
    for gpu in host.gpus:
        if gpu.index == index and gpu.memory_total_mib:  # 0: nvidia-smi did not say
            return gpu.memory_total_mib
    spec = desired.hosts.get(host.name)
    declared = [g.memory // MIB for g in spec.gpus if g.index == index] if spec else []
    return declared[0] if declared else None
