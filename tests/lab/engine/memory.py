"""The stand-in's KV-cache arithmetic, modelled on vLLM V1.

- weights per GPU = size of the checkpoint files / tensor parallel size
- overhead per GPU = OVERHEAD_FIXED + OVERHEAD_FRACTION * weights (CUDA context,
  non-torch allocations, activation peak); a documented constant, not measured
- KV bytes = --kv-cache-memory-bytes when given, else
  utilization * GPU total - weights - overhead (utilization defaults to 0.9)
- one layer's token = 2 (K and V) * KV heads per GPU * head_dim * dtype bytes; MLA caches
  kv_lora_rank + rope dims once per layer
- the cache as vLLM V1's hybrid manager lays it out (kv_cache_utils.py): layers of each
  kind (full attention, with a drafter's layers; sliding window; linear-attention state)
  in groups of one size, the fewest layers of a kind (the most, when under 1.5x the
  fewest), short groups padded; a block of 16 tokens, or for a model with linear
  attention 16 * ceil(state / (16 * one layer's token)) so that one attention page holds
  one layer's state; one pool of kv // page // group size blocks shared by the groups
- KV tokens = blocks // groups * block size; a request takes, per group, the blocks of its
  context (full), of window - 1 + 8,192 batched tokens, plus one (sliding), or one plus
  one per speculative token (a state); Maximum concurrency = blocks / a request's blocks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .modelinfo import DTYPE_BYTES, LinearState, ModelShape

GiB = 1 << 30
MiB = 1 << 20
BLOCK_SIZE = 16
BATCHED_TOKENS = 8192  # vllm serve's default --max-num-batched-tokens
DEFAULT_UTILIZATION = 0.9
OVERHEAD_FIXED = int(0.4 * GiB)
OVERHEAD_FRACTION = 0.02


@dataclass(frozen=True)
class MemoryPlan:
    """What one engine holds on each of its GPUs, and the KV capacity that buys."""

    weights_bytes: int
    overhead_bytes: int
    kv_bytes: int
    bytes_per_token: int  # what a token of context costs over the full-attention layers
    kv_tokens: int
    max_model_len: int
    num_blocks: int = 0
    request_blocks: int = 1
    block_size: int = BLOCK_SIZE
    page_bytes: int = 0
    group_size: int = 1
    state_bytes: int = 0  # one linear layer's state, before it is padded to a page

    @property
    def total_bytes(self) -> int:
        """GPU memory the engine's process holds on one GPU."""
        return self.weights_bytes + self.overhead_bytes + max(self.kv_bytes, 0)

    @property
    def max_concurrency(self) -> float:
        """All blocks over one max-model-len request's blocks, as vLLM prints it."""
        return self.num_blocks / self.request_blocks

    @property
    def request_bytes(self) -> int:
        """What one request of max model len needs; vLLM refuses to start below it."""
        return self.request_blocks * self.page_bytes * self.group_size


def kv_dtype_bytes(kv_cache_dtype: str, model_dtype: str) -> int:
    """Bytes per cached element: --kv-cache-dtype, or the model dtype for 'auto'."""
    if kv_cache_dtype.startswith("fp8"):
        return 1
    name = model_dtype if kv_cache_dtype == "auto" else kv_cache_dtype
    return DTYPE_BYTES.get(name.replace("torch.", ""), 2)


def layer_token_bytes(shape: ModelShape, tp: int, dtype_bytes: int) -> int:
    """KV-cache bytes one token occupies in one attention layer on one GPU."""
    if shape.mla_dim:
        return shape.mla_dim * dtype_bytes
    return 2 * max(1, shape.num_kv_heads // tp) * shape.head_dim * dtype_bytes


def bytes_per_token(shape: ModelShape, tp: int, dtype_bytes: int) -> int:
    """KV-cache bytes one token of context occupies on one GPU (full-attention layers)."""
    return shape.full_attention_layers * layer_token_bytes(shape, tp, dtype_bytes)


def state_bytes(state: LinearState, tp: int, spec_tokens: int) -> int:
    """One linear layer's state per request on one GPU: conv window and recurrent state."""
    conv = (state.conv_rows + spec_tokens) * (state.conv_channels // tp) * 2
    return conv + state.value_heads // tp * state.head_elements * state.state_dtype_bytes


def drafter_layers(shape: ModelShape, speculative: dict[str, Any] | None) -> int:
    """Full-attention layers a drafter adds: none for n-gram, the MTP layers, else one."""
    if not speculative or speculative.get("method") in ("ngram", "ngram_gpu", "suffix"):
        return 0
    if speculative.get("model"):
        return 1
    return shape.mtp_layers or 1


def layout(
    shape: ModelShape, tp: int, dtype_bytes: int, speculative: dict[str, Any] | None, kv: int
) -> tuple[int, int, int, list[str], int]:
    """(block size, page bytes, group size, group kinds, blocks) of the KV cache."""
    token = layer_token_bytes(shape, tp, dtype_bytes)
    spec = int((speculative or {}).get("num_speculative_tokens") or 0)
    counts = {
        "full": shape.full_attention_layers + drafter_layers(shape, speculative),
        "sliding": shape.sliding_layers,
        "state": shape.linear.layers if shape.linear else 0,
    }
    counts = {kind: n for kind, n in counts.items() if n}
    block = BLOCK_SIZE
    if shape.linear is not None:
        block = BLOCK_SIZE * -(-state_bytes(shape.linear, tp, spec) // (BLOCK_SIZE * token))
    fewest, most = min(counts.values()), max(counts.values())
    size = most if most < 1.5 * fewest else fewest
    groups = [kind for kind, n in counts.items() for _ in range(-(-n // size))]
    return block, block * token, size, groups, max(kv, 0) // (block * token) // size


def blocks_per_request(
    groups: list[str], block: int, max_model_len: int, window: int | None, spec: int
) -> int:
    """The pool blocks one request of max_model_len takes over every group."""
    per_kind = {
        "full": -(-max_model_len // block),
        "sliding": -(-min((window or max_model_len) - 1 + BATCHED_TOKENS, max_model_len) // block)
        + 1,
        "state": 1 + spec,
    }
    return sum(per_kind[kind] for kind in groups)


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
    speculative: dict[str, Any] | None = None,
) -> MemoryPlan:
    """Size one engine's per-GPU memory like vLLM V1 does."""
    weights = checkpoint_bytes // tp
    overhead = overhead_bytes(weights)
    kv = kv_budget(gpu_total, weights, overhead, utilization, kv_cache_bytes)
    element = kv_dtype_bytes(kv_cache_dtype, shape.dtype)
    block, page, size, groups, blocks = layout(shape, tp, element, speculative, kv)
    spec = int((speculative or {}).get("num_speculative_tokens") or 0)
    return MemoryPlan(
        weights,
        overhead,
        kv,
        bytes_per_token(shape, tp, element),
        blocks // len(groups) * block,
        max_model_len,
        num_blocks=blocks,
        request_blocks=blocks_per_request(groups, block, max_model_len, shape.sliding_window, spec),
        block_size=block,
        page_bytes=page,
        group_size=size,
        state_bytes=state_bytes(shape.linear, tp, spec) if shape.linear else 0,
    )


def gib(n: int | float) -> float:
    """Bytes -> GiB."""
    return n / GiB
