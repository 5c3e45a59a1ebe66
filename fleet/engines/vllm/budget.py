"""A vLLM seat's KV budget: bytes per GPU, or a fraction of GPU memory.

The keys of a seat file that are vLLM's (`fleet.spec.seat_budget`), registered with the
engine as its `BUDGET`; `fleet.engines.vllm.rules` holds that exactly one is given.
"""

from collections.abc import Mapping
from typing import ClassVar

from pydantic import Field

from fleet.spec.seat_budget import SeatBudget
from fleet.units import ByteSize


class VllmBudget(SeatBudget):
    """`kv_cache_bytes` (`--kv-cache-memory-bytes`) or `gpu_memory_utilization`."""

    REFUSED: ClassVar[Mapping[str, str]] = {
        "parallel": "parallel is for llama.cpp seats: vLLM batches requests within its KV budget"
    }

    kv_cache_bytes: ByteSize | None = Field(None, description="KV-cache budget per GPU.")
    gpu_memory_utilization: float | None = Field(
        None, description="Fraction of GPU memory for the engine (instead of kv_cache_bytes)."
    )

    def kv_bytes(self) -> int | None:
        """The byte budget, where given."""
        return self.kv_cache_bytes

    def memory_fraction(self) -> float | None:
        """The fraction, where given."""
        return self.gpu_memory_utilization
