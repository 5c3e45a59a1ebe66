"""The KV layout of a seat's configuration, or of the configuration a startup log ran.

Called by `fleet.plan.predict` (a seat's estimate), `fleet explain log --model` and the
estimate report (`log_layout`). The seat's engine reads what changes the layout off the
seat (`Engine.kv_settings`: the KV dtype, pipeline parallel size, prefill chunk, a state's
dtype, and the defaults of the image's release and the seat's platform: a seat without
GPUs runs the CPU build, an image whose repository names ROCm a ROCm one, others CUDA);
with the tensor parallel size, a drafter's layers and speculative tokens they go plain to
the engine-neutral model (`fleet.facts.kv_estimate.kv_layout`), and the layout names the
defaults that moved it (`KvLayout.assumptions`). A log's configuration is read off the
log: its non-default args and the platform and release it names. Pure.
"""

from __future__ import annotations

from fleet.engines import Engine, engine_for
from fleet.engines.kv import KvSettings
from fleet.engines.report import EngineReport
from fleet.facts.kv_estimate import (
    BATCHED_TOKENS,
    BLOCK_SIZE,
    KvLayout,
    LayoutRules,
    drafter_layers,
    kv_layout,
)
from fleet.facts.model_config import AttentionKind, ModelFacts
from fleet.spec.images import parse_image
from fleet.spec.models import Seat


def seat_layout(
    seat: Seat,
    facts: ModelFacts,
    draft: ModelFacts | None,
    device_mib: int | None = None,
    device_name: str | None = None,
    amx: bool | None = None,
) -> KvLayout | None:
    """The layout the seat's engine will build; None if config.json is too thin.
    `device_mib` and `device_name` are the memory and name of the seat's first GPU (the
    one the engine asks), where the engine's defaults depend on them; `amx` whether a CPU
    seat's host has AMX (None: not known)."""
    engine = engine_for(seat.engine)
    settings = engine.kv_settings(
        seat.extra_args, parse_image(seat.image).version, seat_platform(seat)
    )
    dtype, tp = settings.dtype, seat.tp_size
    spec = seat.speculative
    extra = (
        drafter_layers(facts, spec.method, spec.draft_model is not None, draft, dtype, tp)
        if spec
        else 0
    )
    settings = _drafting(settings, spec.method if spec else None)
    settings = _by_device(settings, device_mib, device_name)
    settings = _cpu_mla(settings, facts, amx)
    return _layout(facts, settings, tp, extra, spec.num_tokens if spec else 0)


def log_layout(facts: ModelFacts, report: EngineReport, engine: Engine) -> KvLayout | None:
    """The layout plan would predict for the configuration a startup log of `engine` ran (its
    KV dtype, parallel sizes, speculative decoding and non-default args; a drafter's config
    is not known from a log), by the rules of the release and platform the log names."""
    version = tuple(int(p) for p in (report.version or "").split(".")[:3] if p.isdigit())
    settings = engine.kv_settings(
        report.engine_args, version if len(version) == 3 else None, report.platform
    )
    if report.kv_cache_dtype:
        settings = settings.model_copy(update={"dtype": report.kv_cache_dtype.strip().lower()})
    tp = report.tensor_parallel_size or 1
    if report.pipeline_parallel_size:
        settings = settings.model_copy(update={"pipeline_parallel": report.pipeline_parallel_size})
    spec = report.speculative
    method, k = (spec.method, spec.num_tokens or 0) if spec else (None, 0)
    extra = drafter_layers(facts, method, bool(spec and spec.draft_model), None, settings.dtype, tp)
    settings = _cpu_mla(_drafting(settings, method), facts, None)
    return _layout(facts, settings, tp, extra, k)


def _by_device(settings: KvSettings, device_mib: int | None, name: str | None) -> KvSettings:
    """The prefill chunk the engine takes on a device of this memory and name, if it
    depends on them (a name not known rules no row out: the plan line says the size)."""
    if not settings.batched_by_device or settings.batched_tokens is not None:
        return settings
    if not device_mib:  # the engine's figure cannot be known: say which one is assumed
        note = ("sliding", f"prefill chunk {BATCHED_TOKENS} (GPU memory not known)")
        return settings.model_copy(update={"assumptions": (*settings.assumptions, note)})
    lowered = (name or "").lower()
    chunk = next(
        c
        for least, c, unless in settings.batched_by_device
        if device_mib >= least and not (unless and unless in lowered)
    )
    size = f"{device_mib / 1024:.0f} GiB"
    note = ("sliding", f"prefill chunk {chunk} ({f'{name}, {size}' if name else f'{size} GPU'})")
    return settings.model_copy(
        update={"batched_tokens": chunk, "assumptions": (*settings.assumptions, note)}
    )


def _cpu_mla(settings: KvSettings, facts: ModelFacts, amx: bool | None) -> KvSettings:
    """An MLA model on a CPU the engine runs with its reference MLA backend (no AMX, or
    chosen by flag): that backend's block, whatever the flags say, and no prefix caching;
    where the CPU's AMX is not known the plan line says it was assumed."""
    if settings.cpu_mla_block is None or facts.attention.kind != AttentionKind.MLA:
        return settings
    if not settings.cpu_mla_forced and amx is not False:
        if amx is True:
            return settings
        note = ("all", "AMX assumed for MLA (CPU flags not read)")
        return settings.model_copy(update={"assumptions": (*settings.assumptions, note)})
    block = settings.cpu_mla_block
    why = "CPU_MLA chosen" if settings.cpu_mla_forced else "CPU MLA without AMX"
    kept = tuple(n for n in settings.assumptions if not n[1].startswith("block "))
    update = {
        "block_size": block,
        "kernel_block": block,
        "prefix_caching": False,
        "assumptions": (("all", f"block {block} ({why})"), *kept),
    }
    return settings.model_copy(update=update)


def _drafting(settings: KvSettings, method: str | None) -> KvSettings:
    """One batch in flight when a speculative method turns concurrent batches off."""
    if method is None or settings.in_flight_batches == 1 or method in settings.async_drafters:
        return settings
    return settings.model_copy(update={"in_flight_batches": 1})


def _layout(
    facts: ModelFacts, settings: KvSettings, tp: int, extra: int, spec_tokens: int
) -> KvLayout | None:
    """The engine-neutral layout of these settings."""
    batched = settings.batched_tokens
    rules = LayoutRules(
        block_size=settings.block_size or BLOCK_SIZE,
        kernel_block=settings.kernel_block or settings.block_size or BLOCK_SIZE,
        in_flight_batches=settings.in_flight_batches,
        state_cache=settings.state_cache or "none",
        tokens_from_concurrency=settings.tokens_from_concurrency,
        notes=settings.assumptions,
    )
    return kv_layout(
        with_state_dtype(facts, settings.state_dtype),
        settings.dtype,
        tp,
        settings.pipeline_parallel,
        extra,
        spec_tokens,
        BATCHED_TOKENS if batched is None else batched,
        fewest_groups=settings.fewest_groups,
        rules=rules,
    )


def seat_platform(seat: Seat) -> str:
    """What the seat's engine runs on: `cpu` without GPUs, `rocm` for an image of ROCm."""
    if not seat.gpus:
        return "cpu"
    return "rocm" if "rocm" in parse_image(seat.image).repository.lower() else "cuda"


def with_state_dtype(facts: ModelFacts, dtype: str | None) -> ModelFacts:
    """The facts with a state's recurrent dtype as the engine was told it."""
    state = facts.attention.state
    if state is None or dtype in (None, "", "auto"):
        return facts
    attention = facts.attention.model_copy(
        update={"state": state.model_copy(update={"ssm_dtype": str(dtype).lower()})}
    )
    return facts.model_copy(update={"attention": attention})
