"""Whether a startup log on a host ran the very KV configuration a seat asks for.

Such a log's KV tokens, memory and concurrency are the seat's own (`exact` predictions in
`fleet.plan.predict`). The configuration is what decides a seat's KV tokens: the model,
its tensor and pipeline parallel sizes, the KV dtype, speculative decoding, the budget
(bytes, or a fraction of the GPU's memory) and the engine flags that change what a budget
holds. A desired seat and a live one are put in the same form to compare them. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

from fleet.engines import ENGINES, engine_for
from fleet.engines.kv import KvSettings
from fleet.engines.report import EngineReport
from fleet.facts.argv import flag_value
from fleet.facts.kv_estimate import GIB
from fleet.observed.models import ObservedHost, ObservedSeat
from fleet.spec.models import Seat


def exact_log(host: ObservedHost, seat: Seat, total: int | None) -> EngineReport | None:
    """The startup log of a seat on the host that ran this very KV configuration: it states
    the KV memory and tokens, and a byte budget it reserved is the seat's (to 0.01 GiB)."""
    wanted = kv_config(seat, total)
    for live in sorted(host.seats, key=lambda s: (s.name != seat.name, s.name)):
        log = live.engine
        if log is None or not log.kv_cache_tokens or log.kv_cache_gib is None:
            continue
        budget = seat.kv_cache_bytes
        if budget is not None and abs(log.kv_cache_gib - budget / GIB) > 0.006:
            continue
        if live.engine_name == seat.engine and live_kv_config(host, live) == wanted:
            return log
    return None


def kv_config(seat: Seat, total_mib: int | None) -> tuple[object, ...]:
    """What decides the KV tokens of a seat, in a form a live seat can be compared with."""
    budget = (
        ("bytes", seat.kv_cache_bytes)
        if seat.kv_cache_bytes is not None
        else ("fraction", seat.gpu_memory_utilization, total_mib)
    )
    engine = engine_for(seat.engine)
    speculative = engine.desired_shape(seat).get("speculative")
    settings = engine.kv_settings(seat.extra_args, None)
    return _config(
        seat.model, seat.tp_size, seat.extra_args, speculative, budget, engine.KV_FLAGS, settings
    )


def live_kv_config(host: ObservedHost, live: ObservedSeat) -> tuple[object, ...]:
    """The same, for a seat that runs (its argv, the GPUs nvidia-smi shows it on)."""
    engine = live.engine
    if live.kv_cache_bytes is not None:
        budget: tuple[object, ...] = ("bytes", live.kv_cache_bytes)
    else:
        totals = [g.memory_total_mib for g in host.gpus if g.index in live.gpus]
        budget = ("fraction", live.gpu_memory_utilization or 0.9, min(totals, default=None))
    tp = live.tensor_parallel_size or (engine.tensor_parallel_size if engine else None) or 1
    keys = ("method", "num_speculative_tokens", "model")
    spec = {k: v for k, v in (live.speculative or {}).items() if k in keys}
    running = ENGINES.get(live.engine_name or "")
    flags = running.KV_FLAGS if running else ()
    settings = running.kv_settings(live.extra_args, None) if running else KvSettings()
    if engine and engine.kv_cache_dtype:
        settings = settings.model_copy(update={"dtype": engine.kv_cache_dtype})
    return _config(live.model or "", tp, live.extra_args, spec or None, budget, flags, settings)


def _config(
    model: str,
    tp: int,
    args: Sequence[str],
    spec: object,
    budget: tuple[object, ...],
    kv_flags: tuple[str, ...],
    settings: KvSettings,
) -> tuple[object, ...]:
    """`kv_flags` are the engine's flags that change what a KV budget holds (`KV_FLAGS`);
    `settings` its KV dtype and pipeline size (a live seat's dtype as its log states it)."""
    flags = tuple((f, flag_value(args, f)) for f in kv_flags if f in args)
    dtype = settings.dtype.strip().lower()
    return (model.rstrip("/"), tp, settings.pipeline_parallel, dtype, spec, budget, flags)
