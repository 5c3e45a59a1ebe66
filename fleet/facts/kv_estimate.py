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

`kv_layout` is what an engine's logged KV tokens and maximum concurrency follow: the
layers counted by kind (full attention, sliding window, a linear-attention or Mamba state,
`fleet.facts.kv_state`), a drafter's layers added to the full ones, and laid out as vLLM V1
lays them out (`fleet.facts.kv_layout`). A hybrid with state layers gets an
attention block large enough to hold one layer's state, `A * ceil(state / (A *
attention bytes per token))` tokens with A = max(the attention backend's smallest kernel
block, the block size): 16 on CUDA, 128 on the CPU build; the state page padded to it
(vLLM's `HybridAttentionMambaModelConfig`; in 0.32 `Platform._align_hybrid_block_size`).
Pipeline parallel splits the layers, so each GPU holds
the largest stage's share. The values that change the layout (the KV dtype, the pipeline
size, the prefill chunk) come plain from the engine (`fleet.engines.kv.KvSettings`, read
by each engine off its own argv); `drafter_layers` counts what a speculative method adds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fleet.facts.kv_layout import (
    BATCHED_TOKENS,
    BLOCK_SIZE,
    GroupKind,
    KvLayout,
    LayoutRules,
    group_layers,
    padding_layers,
    uniform_layout,
)

if TYPE_CHECKING:
    from fleet.facts.model_config import ModelFacts

__all__ = [
    "BATCHED_TOKENS",
    "BLOCK_SIZE",
    "GIB",
    "GroupKind",
    "KvLayout",
    "LayoutRules",
    "drafter_layers",
    "estimate_kv_bytes_per_token",
    "estimate_kv_tokens",
    "group_layers",
    "kv_dtype_bytes",
    "kv_layout",
    "layer_token_bytes",
    "padding_layers",
    "uniform_layout",
]

GIB = 1024**3

# Bytes per element of each KV-cache dtype name whose layout is plain (vLLM's and SGLang's
# names). `auto` is the model dtype, which engines run at 16 bits (float32 becomes fp16).
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
    hybrid = attention.kind in ("hybrid-linear", "hybrid-mamba")
    if (hybrid or attention.kind == "sliding-window") and attention.full_attention_layers:
        return len(attention.full_attention_layers)
    if hybrid:
        return None
    cross = len(set(attention.cross_attention_layers))
    return max(0, facts.num_layers - cross) or None


def kv_layout(
    facts: ModelFacts,
    kv_dtype: str = "auto",
    tensor_parallel_size: int = 1,
    pipeline_parallel_size: int = 1,
    extra_layers: int = 0,
    spec_tokens: int = 0,
    batched_tokens: int = BATCHED_TOKENS,
    *,
    fewest_groups: bool = False,
    rules: LayoutRules | None = None,
) -> KvLayout | None:
    """The KV-cache layout on one GPU; None if the facts are too thin.

    `extra_layers` are full-attention layers of a drafter the engine runs beside the model
    (an MTP layer, an EAGLE head); `spec_tokens` widens a state's convolution window and
    gives each state group as many more blocks per request. `batched_tokens` is the
    prefill chunk a sliding window group holds beside it. `fewest_groups` groups by the
    fewest layers of a kind always (the engine's `KvSettings` says when: older releases).
    `rules` are the engine's block sizes and cache rules (`LayoutRules`: CUDA's when None).
    """
    rules = rules or LayoutRules()
    element = kv_dtype_bytes(kv_dtype)
    per_token = layer_token_bytes(facts, element, tensor_parallel_size) if element else None
    counts = _layer_counts(facts, extra_layers)
    if per_token is None or not counts or min(tensor_parallel_size, pipeline_parallel_size) < 1:
        return None
    block, window, state_blocks = rules.block_size, None, 1
    if GroupKind.STATE in counts:
        state = facts.attention.state
        if state is None:
            return None
        page = state.page_bytes(tensor_parallel_size, spec_tokens)
        align = max(rules.kernel_block, rules.block_size)
        block = max(block, align * -(-page // (align * per_token)))
        state_blocks = rules.state_blocks(state.kind)
    if GroupKind.SLIDING in counts:
        window = facts.attention.sliding_window
    size, groups = group_layers(counts, near_most=not fewest_groups)
    return KvLayout(
        block_size=block,
        page_bytes=block * per_token,
        layers_per_group=-(-size // pipeline_parallel_size),
        groups=groups,
        sliding_window=window,
        spec_blocks=spec_tokens if GroupKind.STATE in counts else 0,
        batched_tokens=batched_tokens,
        in_flight_batches=rules.in_flight_batches,
        state_blocks=state_blocks,
        tokens_from_concurrency=rules.tokens_from_concurrency,
        assumptions=rules.notes_for(set(groups)),
    )


def layer_token_bytes(facts: ModelFacts, element: int, tensor_parallel_size: int) -> int | None:
    """What one token costs in one attention layer on one GPU."""
    attention = facts.attention
    if attention.kind == "mla":
        if attention.kv_lora_rank is None:
            return None
        return (attention.kv_lora_rank + (attention.qk_rope_head_dim or 0)) * element
    if facts.num_kv_heads is None or facts.head_dim is None:
        return None
    return 2 * max(1, facts.num_kv_heads // tensor_parallel_size) * facts.head_dim * element


def _layer_counts(facts: ModelFacts, extra: int) -> dict[GroupKind, int]:
    """How many layers of each kind the engine caches for (a drafter's layers attend fully);
    empty when the facts do not say."""
    attention = facts.attention
    if facts.num_layers is None or attention.kind is None:
        return {}
    full = len(attention.full_attention_layers)
    if attention.kind in ("hybrid-linear", "hybrid-mamba"):
        return {GroupKind.FULL: full + extra, GroupKind.STATE: len(attention.state_layers)}
    if attention.kind == "sliding-window":  # no full layers listed: every layer slides
        return {GroupKind.FULL: full + extra, GroupKind.SLIDING: facts.num_layers - full}
    layers = facts.num_layers - len(set(attention.cross_attention_layers))
    return {GroupKind.FULL: layers + extra} if layers > 0 else {}


NO_KV_DRAFTERS = ("ngram", "ngram_gpu", "suffix")  # speculative methods with no KV of their own
DRAFTER_HEAD_LAYERS = 1  # an EAGLE head or MTP module is one decoder layer unless told


def drafter_layers(
    facts: ModelFacts,
    method: str | None,
    draft_model: bool,
    draft: ModelFacts | None = None,
    kv_dtype: str = "auto",
    tensor_parallel_size: int = 1,
) -> int:
    """Layers a speculative drafter adds to the engine's KV pool, counted in the model's own
    full-attention layers: none for n-gram and suffix decoding; the model's MTP layers when
    there is no draft model; a draft model's layers (one for an EAGLE head whose config is
    not known), a drafter of another geometry in as many layers as its bytes per token take."""
    if method is None or method in NO_KV_DRAFTERS:
        return 0
    if not draft_model:
        return facts.mtp_layers if facts.mtp_layers is not None else DRAFTER_HEAD_LAYERS
    if draft is None or not draft.num_layers:
        return DRAFTER_HEAD_LAYERS
    element = kv_dtype_bytes(kv_dtype) or 2
    mine = layer_token_bytes(facts, element, tensor_parallel_size)
    theirs = layer_token_bytes(draft, element, tensor_parallel_size)
    if not mine or not theirs:
        return draft.num_layers
    return -(-draft.num_layers * theirs // mine)
