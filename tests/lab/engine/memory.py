"""The stand-in's KV-cache arithmetic, modelled on vLLM V1.

- weights per GPU = size of the checkpoint files / tensor parallel size
- overhead per GPU = OVERHEAD_FIXED + OVERHEAD_FRACTION * weights (CUDA context,
  non-torch allocations, activation peak); a documented constant, not measured
- KV bytes = --kv-cache-memory-bytes when given, else
  utilization * GPU total - weights - overhead (utilization defaults to 0.9)
- bytes per token per GPU = 2 (K and V) * full-attention layers * KV heads per GPU
  * head_dim * dtype bytes; MLA caches kv_lora_rank + rope dims once per layer.
  Sliding-window and linear-attention layers are not counted: an approximation of
  vLLM's hybrid KV-cache manager, which gives them a small fixed-size state.
- KV tokens = whole 16-token blocks that fit; concurrency = tokens / max model len.
"""

from __future__ import annotations

from dataclasses import dataclass

from .modelinfo import DTYPE_BYTES, ModelShape

GiB = 1 << 30
MiB = 1 << 20
BLOCK_SIZE = 16
DEFAULT_UTILIZATION = 0.9
OVERHEAD_FIXED = int(0.4 * GiB)
OVERHEAD_FRACTION = 0.02


@dataclass(frozen=True)
class MemoryPlan:
    """What one engine holds on each of its GPUs, and the KV capacity that buys."""

    weights_bytes: int
    overhead_bytes: int
    kv_bytes: int
    bytes_per_token: int
    kv_tokens: int
    max_model_len: int

    @property
    def total_bytes(self) -> int:
        """GPU memory the engine's process holds on one GPU."""
        return self.weights_bytes + self.overhead_bytes + max(self.kv_bytes, 0)

    @property
    def max_concurrency(self) -> float:
        """KV tokens / max model len, as vLLM prints it."""
        return self.kv_tokens / self.max_model_len


def kv_dtype_bytes(kv_cache_dtype: str, model_dtype: str) -> int:
    """Bytes per cached element: --kv-cache-dtype, or the model dtype for 'auto'."""
    if kv_cache_dtype.startswith("fp8"):
        return 1
    name = model_dtype if kv_cache_dtype == "auto" else kv_cache_dtype
    return DTYPE_BYTES.get(name.replace("torch.", ""), 2)


def bytes_per_token(shape: ModelShape, tp: int, dtype_bytes: int) -> int:
    """KV-cache bytes one token occupies on one GPU."""
    if shape.mla_dim:
        return shape.full_attention_layers * shape.mla_dim * dtype_bytes
    heads = max(1, shape.num_kv_heads // tp)
    return 2 * shape.full_attention_layers * heads * shape.head_dim * dtype_bytes


def overhead_bytes(weights_per_gpu: int) -> int:
    """Activation and CUDA-context memory besides weights and KV cache."""
    return OVERHEAD_FIXED + int(OVERHEAD_FRACTION * weights_per_gpu)


def kv_budget(
    gpu_total: int,
    weights: int,
    overhead: int,
    utilization: float | None,
    kv_cache_bytes: int | None,
) -> int:
    """KV bytes per GPU: the pinned budget, or what the utilization fraction leaves."""
    if kv_cache_bytes is not None:
        return kv_cache_bytes
    fraction = DEFAULT_UTILIZATION if utilization is None else utilization
    return int(fraction * gpu_total) - weights - overhead


def plan_memory(
    shape: ModelShape,
    checkpoint_bytes: int,
    tp: int,
    gpu_total: int,
    utilization: float | None,
    kv_cache_bytes: int | None,
    kv_cache_dtype: str,
    max_model_len: int,
) -> MemoryPlan:
    """Size one engine's per-GPU memory like vLLM V1 does."""
    weights = checkpoint_bytes // tp
    overhead = overhead_bytes(weights)
    kv = kv_budget(gpu_total, weights, overhead, utilization, kv_cache_bytes)
    per_token = bytes_per_token(shape, tp, kv_dtype_bytes(kv_cache_dtype, shape.dtype))
    blocks = max(kv, 0) // (per_token * BLOCK_SIZE)
    return MemoryPlan(weights, overhead, kv, per_token, blocks * BLOCK_SIZE, max_model_len)


def gib(n: int | float) -> float:
    """Bytes -> GiB."""
    return n / GiB
