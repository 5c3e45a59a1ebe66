"""A llama.cpp seat's KV budget: its parallel slots, each holding a whole context.

The keys of a seat file that are llama.cpp's (`fleet.spec.seat_budget`), registered with
the engine as its `BUDGET`: llama-server's cache is `context` x `parallel` cells, so a byte
budget or a memory fraction is refused at its key, in the engine's own words.
"""

from collections.abc import Mapping
from typing import ClassVar

from pydantic import Field

from fleet.spec.seat_budget import SeatBudget

_BY_SLOTS = "llama.cpp sizes its KV cache by context x parallel slots: remove {}"


class LlamaCppBudget(SeatBudget):
    """`parallel`: the slots `--parallel` renders (one when not given)."""

    REFUSED: ClassVar[Mapping[str, str]] = {
        key: _BY_SLOTS.format(key) for key in ("kv_cache_bytes", "gpu_memory_utilization")
    }

    parallel: int | None = Field(
        None,
        ge=1,
        description="Parallel slots, each holding `context` tokens; "
        "the KV cache is sized context x parallel [1].",
    )

    def slots(self) -> int | None:
        """The slots, where given."""
        return self.parallel
