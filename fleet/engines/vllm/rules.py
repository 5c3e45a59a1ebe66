"""vLLM's offline rules on a seat: one KV budget kind (bytes on the CPU), tensor parallel,
speculative decoding.

`check_seat` is the vLLM engine module's rule, run by `fleet.engines.rules` over every
vLLM seat of desired/ after the engine-neutral rules of `fleet.spec.validate`; each
problem names the seat's file and key. Pure.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator

from fleet.engines.vllm import speculative
from fleet.spec.load import Sources
from fleet.spec.models import Seat
from fleet.spec.problems import Problem
from fleet.spec.seat_rules import seat_file

TP_FLAGS = ("--tensor-parallel-size", "-tp")


def check_seat(seat: Seat, src: Sources) -> Iterator[Problem]:
    """Every problem of one vLLM seat's engine settings."""
    rel = seat_file(seat)
    has_bytes = seat.kv_cache_bytes is not None
    if has_bytes == (seat.gpu_memory_utilization is not None):
        yield src.problem(
            rel,
            ("kv_cache_bytes",) if has_bytes else (),
            "give exactly one of kv_cache_bytes and gpu_memory_utilization",
        )
    if not seat.gpus and seat.gpu_memory_utilization is not None:
        yield src.problem(
            rel,
            ("gpu_memory_utilization",),
            "a vLLM seat on the CPU (gpus: []) has no GPU to take a fraction of: "
            "give its KV cache in kv_cache_bytes",
        )
    yield from implied_flags(seat, src, TP_FLAGS)
    yield from _check_speculative(seat, src)


def implied_flags(seat: Seat, src: Sources, flags: tuple[str, ...]) -> Iterator[Problem]:
    """Tensor-parallel flags in extra_args: fleet renders them from the seat's GPUs."""
    for flag in flags:
        if any(arg == flag or arg.startswith(flag + "=") for arg in seat.extra_args):
            yield src.problem(
                seat_file(seat),
                ("extra_args",),
                f"{flag} is implied by gpus; remove it from extra_args",
            )


def _check_speculative(seat: Seat, src: Sources) -> Iterator[Problem]:
    """The method is one vLLM accepts, and a drafter exactly where one is needed."""
    spec = seat.speculative
    if spec is None:
        return
    rel = seat_file(seat)
    if spec.method not in speculative.SPECULATIVE_METHODS:
        yield src.problem(
            rel,
            ("speculative", "method"),
            f"unknown speculative method {spec.method!r}{_closest(spec.method)}",
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
