"""The engine-neutral offline rules on a seat's KV budget and speculative decoding: a
fraction in (0, 1], fractions per GPU summing to at most 1, a byte budget within its GPU's
memory, k >= 1. Which budget fields and methods an engine takes is the engine's own rule
(`check_seat` of each module under `fleet.engines`, run by `fleet.engines.rules`).

Two of the rules `fleet.spec.validate` runs over desired/; each problem names the seat's
file and the key. Pure.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from fleet.spec.load import Sources
from fleet.spec.models import DesiredFleet, Seat
from fleet.spec.problems import Problem
from fleet.units import format_bytes


def seat_file(seat: Seat) -> str:
    """A seat's file, relative to desired/."""
    return f"seats/{seat.name}.yaml"


def check_memory(desired: DesiredFleet, src: Sources) -> Iterator[Problem]:
    """Fractions in (0, 1] that sum to <= 1 per GPU; byte budgets that fit the GPU."""
    fractions: dict[tuple[str, int], list[Seat]] = defaultdict(list)
    for seat in sorted(desired.seats.values(), key=lambda s: s.name):
        rel = seat_file(seat)
        fraction = seat.gpu_memory_utilization
        if fraction is not None and not 0 < fraction <= 1:
            yield src.problem(
                rel,
                ("gpu_memory_utilization",),
                f"gpu_memory_utilization must be in (0, 1], got {fraction}",
            )
        for index in seat.gpus:
            if fraction is not None:
                fractions[(seat.host, index)].append(seat)
        yield from _check_budget_fits(desired, seat, src)
    yield from _check_fraction_sums(fractions, src)


def _check_budget_fits(desired: DesiredFleet, seat: Seat, src: Sources) -> Iterator[Problem]:
    host = desired.hosts.get(seat.host)
    if host is None or seat.kv_cache_bytes is None:
        return
    for gpu in host.gpus:
        if gpu.index in seat.gpus and seat.kv_cache_bytes > gpu.memory:
            yield src.problem(
                seat_file(seat),
                ("kv_cache_bytes",),
                f"KV budget "
                f"{format_bytes(seat.kv_cache_bytes)} exceeds GPU {gpu.index}'s "
                f"memory ({format_bytes(gpu.memory)}) on {host.name}",
            )


def _check_fraction_sums(
    fractions: dict[tuple[str, int], list[Seat]], src: Sources
) -> Iterator[Problem]:
    for (host, index), seats in sorted(fractions.items()):
        total = sum(s.gpu_memory_utilization or 0 for s in seats)
        if total > 1.0 + 1e-9:
            names = ", ".join(f"{s.name} {s.gpu_memory_utilization}" for s in seats)
            last = seats[-1]
            yield src.problem(
                seat_file(last),
                ("gpu_memory_utilization",),
                f"gpu_memory_utilization on {host} GPU {index} sums to {total:.2f} > 1.0 ({names})",
            )


def check_speculative(desired: DesiredFleet, src: Sources) -> Iterator[Problem]:
    """k >= 1 (which methods and drafters an engine takes is its own rule)."""
    for seat in sorted(desired.seats.values(), key=lambda s: s.name):
        spec = seat.speculative
        if spec is not None and spec.num_tokens < 1:
            yield src.problem(
                seat_file(seat),
                ("speculative", "num_tokens"),
                f"num_tokens must be at least 1, got {spec.num_tokens}",
            )
