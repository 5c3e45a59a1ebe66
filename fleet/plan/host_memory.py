"""A CPU seat's memory: a llama.cpp seat with `gpus: []` is checked against the host's RAM.

Called by `fleet.plan.blockers` for seats that hold no GPU. The seat needs its GGUF
file's size (llama.cpp maps the weights into RAM), its KV cache (per parallel slot: the
context x the header's KV bytes per token of its full-attention layers, f16, plus what a
slot holds whatever its context: sliding-window layers' window, linear-attention layers'
state; `fleet.facts.gguf`) and a fixed overhead; the host offers what
/proc/meminfo calls available, plus what the seat's own running engine would give back.
Where a fact cannot be read, the blocker says so instead of guessing.
"""

from __future__ import annotations

from collections.abc import Iterator

from fleet.observed.models import ObservedHost
from fleet.plan.actions import Blocker
from fleet.spec.models import Seat

MIB = 1024**2
CPU_OVERHEAD_MIB = 512  # llama-server's compute buffers and the process itself


def ram_need_mib(host: ObservedHost, seat: Seat) -> int | None:
    """RAM the seat's engine will take; None where the model's facts are unread."""
    info = host.models.get(seat.model.rstrip("/"))
    if info is None or info.size_bytes is None:
        return None
    per_slot = (info.kv_bytes_per_token or 0) * seat.context + info.kv_fixed_bytes
    kv = per_slot * (seat.parallel or 1)
    return (info.size_bytes + kv) // MIB + CPU_OVERHEAD_MIB


def ram_blockers(host: ObservedHost, seat: Seat) -> Iterator[Blocker]:
    """A blocker when the host's available RAM cannot hold the seat, or cannot be read."""
    need = ram_need_mib(host, seat)
    if need is None:
        yield Blocker(
            target=seat.name,
            message=f"cannot size {seat.model} on {host.name}: its GGUF header was not read",
        )
        return
    if host.memory_available_mib is None:
        yield Blocker(target=seat.name, message=f"cannot read /proc/meminfo on {host.name}")
        return
    available = host.memory_available_mib + _own_mib(host, seat)
    if need > available:
        yield Blocker(
            target=seat.name,
            message=f"needs ~{need:,} MiB of RAM on {host.name} (model, KV for "
            f"{seat.context * (seat.parallel or 1):,} tokens, overhead), which has "
            f"{available:,} MiB available of {host.memory_total_mib or 0:,} MiB: lower context "
            "or parallel, or place it on a host with more memory",
        )


def _own_mib(host: ObservedHost, seat: Seat) -> int:
    """What the seat's running engine holds now (given back when it is replaced)."""
    current = host.seat(seat.name)
    if current is None or not current.container.running:
        return 0
    return ram_need_mib(host, seat) or 0
