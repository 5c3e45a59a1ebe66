"""A CPU seat's memory: a seat with `gpus: []` is checked against the host's RAM.

Called by `fleet.plan.blockers` for seats that hold no GPU (llama.cpp, and vLLM's CPU
build). The seat needs its model's size on disk (llama.cpp maps the GGUF into RAM, vLLM
loads the safetensors), its KV cache (vLLM: kv_cache_bytes, what its CPU build reserves;
llama.cpp: per parallel slot, the context x the header's KV bytes per token of its
full-attention layers, f16, plus what a slot holds whatever its context: sliding-window
layers' window, linear-attention layers' state; `fleet.facts.gguf`) and the engine's own
overhead (`Engine.CPU_OVERHEAD_MIB`); the host offers what /proc/meminfo calls available,
plus what the seat's own running engine would give back. Where a fact cannot be read, the
blocker says so (`Engine.UNSIZED`) instead of guessing.
"""

from __future__ import annotations

from collections.abc import Iterator

from fleet.engines import engine_for
from fleet.observed.models import ModelInfo, ObservedHost
from fleet.plan.actions import Blocker
from fleet.spec.models import Seat

MIB = 1024**2


def ram_line(host: ObservedHost, seat: Seat) -> str | None:
    """What plan prints for a CPU seat whose engine is not sized from a header (vLLM's CPU
    build): `RAM of apu (60,546 MiB available): model 2,100 MiB + KV 256 MiB + engine
    ~2,816 MiB = ~5,172 MiB, estimate`; None for a GPU seat or where the model is unread."""
    info = host.models.get(seat.model.rstrip("/"))
    if seat.gpus or info is None or info.size_bytes is None:
        return None
    model, kv = info.size_bytes // MIB, kv_bytes(info, seat) // MIB
    overhead = engine_for(seat.engine).CPU_OVERHEAD_MIB
    available = host.memory_available_mib
    room = f" ({available:,} MiB available)" if available is not None else ""
    return (
        f"RAM of {host.name}{room}: model {model:,} MiB + KV {kv:,} MiB + engine "
        f"~{overhead:,} MiB = ~{model + kv + overhead:,} MiB, estimate from the model's size"
    )


def ram_need_mib(host: ObservedHost, seat: Seat) -> int | None:
    """RAM the seat's engine will take; None where the model's facts are unread."""
    info = host.models.get(seat.model.rstrip("/"))
    if info is None or info.size_bytes is None:
        return None
    overhead = engine_for(seat.engine).CPU_OVERHEAD_MIB
    return (info.size_bytes + kv_bytes(info, seat)) // MIB + overhead


def kv_bytes(info: ModelInfo, seat: Seat) -> int:
    """The seat's KV cache in RAM: its budget where it gives one, else its slots' tokens
    (and what each slot holds whatever its context)."""
    if seat.kv_cache_bytes is not None:
        return seat.kv_cache_bytes
    per_slot = (info.kv_bytes_per_token or 0) * seat.context + info.kv_fixed_bytes
    return per_slot * (seat.parallel or 1)


def ram_blockers(host: ObservedHost, seat: Seat) -> Iterator[Blocker]:
    """A blocker when the host's available RAM cannot hold the seat, or cannot be read."""
    need = ram_need_mib(host, seat)
    if need is None:
        yield Blocker(
            target=seat.name,
            message=f"cannot size {seat.model} on {host.name}: " + engine_for(seat.engine).UNSIZED,
        )
        return
    if host.memory_available_mib is None:
        yield Blocker(target=seat.name, message=f"cannot read /proc/meminfo on {host.name}")
        return
    available = host.memory_available_mib + _own_mib(host, seat)
    if need > available:
        yield Blocker(
            target=seat.name,
            message=f"needs ~{need:,} MiB of RAM on {host.name} ({_kv_text(seat)}, "
            f"overhead), which has {available:,} MiB available of "
            f"{host.memory_total_mib or 0:,} MiB: {_lower(seat)}, or place it on a host "
            "with more memory",
        )


def _own_mib(host: ObservedHost, seat: Seat) -> int:
    """What the seat's running engine holds now (given back when it is replaced)."""
    current = host.seat(seat.name)
    if current is None or not current.instance.running:
        return 0
    return ram_need_mib(host, seat) or 0


def _kv_text(seat: Seat) -> str:
    if seat.kv_cache_bytes is not None:
        return f"model, KV {seat.kv_cache_bytes // MIB:,} MiB"
    return f"model, KV for {seat.context * (seat.parallel or 1):,} tokens"


def _lower(seat: Seat) -> str:
    return (
        "lower kv_cache_bytes" if seat.kv_cache_bytes is not None else "lower context or parallel"
    )
