"""An SGLang seat's KV budget: its memory fraction (`--mem-fraction-static`).

The keys of a seat file that are SGLang's (`fleet.spec.seat_budget`), registered with the
engine as its `BUDGET`; `fleet.engines.sglang.rules` holds that the fraction is given.
"""

from collections.abc import Mapping
from typing import ClassVar

from pydantic import Field

from fleet.spec.seat_budget import SeatBudget


class SGLangBudget(SeatBudget):
    """`gpu_memory_utilization`: the fraction for the weights and the KV pool together."""

    REFUSED: ClassVar[Mapping[str, str]] = {
        "kv_cache_bytes": "SGLang takes no KV byte budget: give gpu_memory_utilization "
        "(its memory fraction for weights and KV pool), not kv_cache_bytes",
        "parallel": "parallel is for llama.cpp seats",
    }

    gpu_memory_utilization: float | None = Field(
        None, description="Fraction of GPU memory for the engine (its weights and KV pool)."
    )

    def memory_fraction(self) -> float | None:
        """The fraction, where given."""
        return self.gpu_memory_utilization
