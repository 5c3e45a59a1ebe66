"""SGLang's offline rules on a seat: a memory fraction, GPUs, tensor parallel, its algorithms.

`check_seat` is the SGLang engine module's rule, run by `fleet.engines.rules`. The
algorithms are those SGLang 0.5.23 builds in (`srt/arg_groups/fields/spec.py:31`). Pure.
"""

from __future__ import annotations

from collections.abc import Iterator

from fleet.spec.load import Sources
from fleet.spec.models import Seat
from fleet.spec.problems import Problem
from fleet.spec.seat_rules import seat_file

TP_FLAGS = ("--tp-size", "--tensor-parallel-size")
DRAFTER_ALGORITHMS = frozenset({"EAGLE", "EAGLE3", "STANDALONE", "DFLASH"})
DRAFTLESS_ALGORITHMS = frozenset({"NEXTN", "NGRAM"})
ALGORITHMS = DRAFTER_ALGORITHMS | DRAFTLESS_ALGORITHMS | {"DSPARK", "UNO"}


def check_seat(seat: Seat, src: Sources) -> Iterator[Problem]:
    """A memory fraction; GPUs; an algorithm SGLang knows."""
    rel = seat_file(seat)
    if seat.gpu_memory_utilization is None:  # a byte budget is refused by SGLangBudget
        yield src.problem(rel, (), "an SGLang seat needs gpu_memory_utilization")
    if not seat.gpus:
        yield src.problem(rel, ("gpus",), "an sglang seat needs at least one GPU")
    for flag in TP_FLAGS:
        if any(arg == flag or arg.startswith(flag + "=") for arg in seat.extra_args):
            yield src.problem(
                rel, ("extra_args",), f"{flag} is implied by gpus; remove it from extra_args"
            )
    yield from _check_speculative(seat, src)


def _check_speculative(seat: Seat, src: Sources) -> Iterator[Problem]:
    spec = seat.speculative
    if spec is None:
        return
    rel = seat_file(seat)
    if spec.method not in ALGORITHMS:
        known = ", ".join(sorted(ALGORITHMS))
        yield src.problem(
            rel,
            ("speculative", "method"),
            f"unknown SGLang speculative algorithm {spec.method!r} (known: {known})",
        )
    elif spec.method in DRAFTER_ALGORITHMS and not spec.draft_model:
        yield src.problem(
            rel, ("speculative",), f"{spec.method} drafts with a separate model: set draft_model"
        )
    elif spec.method in DRAFTLESS_ALGORITHMS and spec.draft_model:
        yield src.problem(
            rel,
            ("speculative", "draft_model"),
            f"{spec.method} drafts without a separate model: remove draft_model",
        )
