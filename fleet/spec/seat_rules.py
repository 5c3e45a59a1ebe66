"""The offline rules on a seat's engine settings: one KV budget kind that fits its GPUs
(fractions per GPU summing to at most 1), and speculative decoding vLLM or llama.cpp can
run (a known method, k >= 1, a drafter exactly where one is needed).

Two of the rules `fleet.spec.validate` runs over desired/; each problem names the seat's
file and the key. Pure.
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from collections.abc import Iterator

from fleet.spec import speculative
from fleet.spec.load import Sources
from fleet.spec.models import DesiredFleet, Seat
from fleet.spec.problems import Problem
from fleet.units import format_bytes


def seat_file(seat: Seat) -> str:
    """A seat's file, relative to desired/."""
    return f"seats/{seat.name}.yaml"


def check_memory(desired: DesiredFleet, src: Sources) -> Iterator[Problem]:
    """One KV budget kind per seat; fractions per GPU sum to <= 1; budgets fit the GPU."""
    fractions: dict[tuple[str, int], list[Seat]] = defaultdict(list)
    for seat in sorted(desired.seats.values(), key=lambda s: s.name):
        rel = seat_file(seat)
        has_bytes, has_fraction = (
            seat.kv_cache_bytes is not None,
            seat.gpu_memory_utilization is not None,
        )
        if seat.engine == "llama.cpp":
            yield from _check_llamacpp_budget(seat, src)
        elif seat.parallel is not None:
            yield src.problem(
                rel,
                ("parallel",),
                "parallel is for llama.cpp seats: vLLM batches requests within its KV budget",
            )
        if seat.engine == "vllm" and has_bytes == has_fraction:
            yield src.problem(
                rel,
                ("kv_cache_bytes",) if has_bytes else (),
                "give exactly one of kv_cache_bytes and gpu_memory_utilization",
            )
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


def _check_llamacpp_budget(seat: Seat, src: Sources) -> Iterator[Problem]:
    """llama.cpp sizes its KV cache by context x parallel slots; it takes no byte budget."""
    for field in ("kv_cache_bytes", "gpu_memory_utilization"):
        if getattr(seat, field) is not None:
            yield src.problem(
                seat_file(seat),
                (field,),
                f"llama.cpp sizes its KV cache by context x parallel slots: remove {field}",
            )


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
    """The method is one vLLM accepts, k >= 1, and a drafter exactly where one is needed."""
    for seat in sorted(desired.seats.values(), key=lambda s: s.name):
        spec = seat.speculative
        if spec is None:
            continue
        rel = seat_file(seat)
        if seat.engine == "llama.cpp" and spec.method != "draft_model":
            yield src.problem(
                rel,
                ("speculative", "method"),
                f"llama.cpp drafts only with a separate model: method draft_model, "
                f"not {spec.method!r}",
            )
            continue
        if spec.method not in speculative.SPECULATIVE_METHODS:
            yield src.problem(
                rel,
                ("speculative", "method"),
                f"unknown speculative method {spec.method!r}{_closest(spec.method)}",
            )
        if spec.num_tokens < 1:
            yield src.problem(
                rel,
                ("speculative", "num_tokens"),
                f"num_tokens must be at least 1, got {spec.num_tokens}",
            )
        needs = speculative.needs_drafter(spec.method)
        if needs and not spec.draft_model:
            yield src.problem(
                rel,
                ("speculative",),
                f"method {spec.method!r} drafts with a separate model: set draft_model",
            )
        if needs is False and spec.draft_model:
            yield src.problem(
                rel,
                ("speculative", "draft_model"),
                f"method {spec.method!r} drafts without a separate model: remove draft_model",
            )


def _closest(method: str) -> str:
    match = difflib.get_close_matches(method, sorted(speculative.SPECULATIVE_METHODS), n=1)
    return f" (did you mean {match[0]!r}?)" if match else ""
