"""An estimate of KV-cache bytes per token from model facts, for planning only.

Called by `ModelFacts.to_explain_json`, `fleet explain log --model` and the planner when a
seat's KV budget must be sized before the engine has run. The engine's logged
`GPU KV cache size` is the fact; this estimate is always shown beside it, never instead.

Per layer that keeps a K and a V entry for every token of the context:
`2 * num_kv_heads * head_dim * dtype_bytes` (GQA and MHA alike); MLA keeps one latent of
`kv_lora_rank + qk_rope_head_dim` values. Layers that do not grow with the context are
left out: sliding-window layers (bounded by the window when some layers attend fully),
linear-attention layers (a fixed state per sequence) and cross-attention layers (image
tokens). With tensor parallelism each GPU holds `max(1, num_kv_heads // tp)` heads; an
MLA latent is replicated on every GPU.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fleet.facts.model_config import ModelFacts

GIB = 1024**3

# Bytes per element of each `--kv-cache-dtype` vLLM accepts whose layout is plain.
# `auto` is the model dtype, which vLLM runs at 16 bits (float32 checkpoints become fp16).
KV_DTYPE_BYTES: dict[str, int] = {
    "auto": 2,
    "bfloat16": 2,
    "float16": 2,
    "half": 2,
    "fp16": 2,
    "bf16": 2,
    "float32": 4,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "fp8_inc": 1,
    "int8": 1,
}


def kv_dtype_bytes(kv_dtype: str) -> int | None:
    """Bytes per cached element for a KV dtype; None for one whose layout is not plain."""
    return KV_DTYPE_BYTES.get(kv_dtype.strip().lower())


def estimate_kv_bytes_per_token(
    facts: ModelFacts, kv_dtype: str = "auto", tensor_parallel_size: int = 1
) -> int | None:
    """KV-cache bytes one token of context costs on one GPU; None if the facts are too thin."""
    element = kv_dtype_bytes(kv_dtype)
    layers = _context_layers(facts)
    if element is None or layers is None or tensor_parallel_size < 1:
        return None
    attention = facts.attention
    if attention.kind == "mla":
        if attention.kv_lora_rank is None:
            return None
        latent = attention.kv_lora_rank + (attention.qk_rope_head_dim or 0)
        return layers * latent * element
    if facts.num_kv_heads is None or facts.head_dim is None:
        return None
    heads = max(1, facts.num_kv_heads // tensor_parallel_size)
    return layers * 2 * heads * facts.head_dim * element


def estimate_kv_tokens(
    facts: ModelFacts, kv_cache_gib: float, kv_dtype: str = "auto", tensor_parallel_size: int = 1
) -> int | None:
    """How many tokens of context a per-GPU KV budget of `kv_cache_gib` holds."""
    per_token = estimate_kv_bytes_per_token(facts, kv_dtype, tensor_parallel_size)
    if not per_token or kv_cache_gib <= 0:
        return None
    return int(kv_cache_gib * GIB // per_token)


def _context_layers(facts: ModelFacts) -> int | None:
    """The number of layers whose KV cache grows with the context."""
    attention = facts.attention
    if facts.num_layers is None or attention.kind is None:
        return None
    if attention.kind in ("hybrid-linear", "sliding-window") and attention.full_attention_layers:
        return len(attention.full_attention_layers)
    if attention.kind == "hybrid-linear":
        return None
    cross = len(set(attention.cross_attention_layers))
    return max(0, facts.num_layers - cross) or None
