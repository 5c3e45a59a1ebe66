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

`kv_layout` is what the engine's `GPU KV cache size: N tokens` line follows (vLLM V1,
kv_cache_utils.py): whole blocks of 16 tokens; the layers gathered in KV-cache groups of
equal size (full attention, sliding window, a linear-attention state), one block table per
group and `num_blocks // groups * block_size` tokens reported. A hybrid model with
linear-attention layers gets an attention block large enough to hold one layer's state
(vLLM's HybridAttentionMambaModelConfig). Pipeline parallel splits the layers, so each
GPU holds the largest stage's share. `kv_dtype` and `pipeline_parallel` read the flags
that change the layout off an engine argv.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import TYPE_CHECKING

from fleet.base import CoreModel

if TYPE_CHECKING:
    from fleet.facts.model_config import ModelFacts

GIB = 1024**3
BLOCK_SIZE = 16  # vLLM's default --block-size on CUDA
BATCHED_TOKENS = 8192  # vLLM's default --max-num-batched-tokens for `vllm serve` on a GPU
STATE_BYTES = 2  # linear-attention state dtype: the model dtype, which vLLM runs at 16 bits

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


def flag_value(args: Sequence[str], *names: str) -> str | None:
    """`--flag VALUE` or `--flag=VALUE` in an engine argv (the last one wins)."""
    found = None
    for index, arg in enumerate(args):
        name, equals, value = arg.partition("=")
        if name in names:
            found = value if equals else (args[index + 1] if index + 1 < len(args) else "")
    return found


def kv_dtype(args: Sequence[str]) -> str:
    """`--kv-cache-dtype`, `auto` when not given."""
    return (flag_value(args, "--kv-cache-dtype") or "auto").strip().lower()


def pipeline_parallel(args: Sequence[str]) -> int:
    """`--pipeline-parallel-size` (`-pp`), 1 when not given or not a number."""
    value = flag_value(args, "--pipeline-parallel-size", "-pp") or "1"
    return int(value) if value.isdigit() and int(value) > 0 else 1


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


class GroupKind(StrEnum):
    """What one KV-cache group keeps for a request."""

    FULL = "full"  # every token of the context
    SLIDING = "sliding"  # the tokens of its window
    STATE = "state"  # one fixed-size linear-attention state


class KvLayout(CoreModel):
    """A model's KV cache on one GPU as vLLM lays it out: blocks, pages, groups.

    A block holds `block_size` tokens; one layer's block takes `page_bytes`; the layers
    sit in `len(groups)` groups of `layers_per_group` (padded) layers each.
    """

    block_size: int
    page_bytes: int
    layers_per_group: int
    groups: tuple[GroupKind, ...]
    sliding_window: int | None = None

    @property
    def block_bytes(self) -> int:
        """Memory one block costs across one layer of every group."""
        return self.page_bytes * self.layers_per_group

    def tokens(self, budget_bytes: int) -> int:
        """The `GPU KV cache size` a budget gives: whole blocks per group times block size."""
        blocks = max(budget_bytes, 0) // self.page_bytes // self.layers_per_group
        return blocks // len(self.groups) * self.block_size

    def budget_for(self, tokens: int) -> int:
        """The smallest budget whose `tokens` is at least `tokens`."""
        per_group = -(-max(tokens, 0) // self.block_size)
        return per_group * len(self.groups) * self.block_bytes

    def largest_budget(self, tokens: int) -> int:
        """The largest budget whose `tokens` is at most `tokens` (0 if none is)."""
        per_group = max(tokens, 0) // self.block_size
        return max((per_group + 1) * len(self.groups) * self.block_bytes - 1, 0)

    def max_concurrency(self, budget_bytes: int, context: int) -> float:
        """The engine's own `Maximum concurrency`: all blocks over one request's blocks."""
        blocks = max(budget_bytes, 0) // self.page_bytes // self.layers_per_group
        return blocks / (self.request_bytes(context) // self.block_bytes)

    def request_bytes(self, context: int, batched_tokens: int = BATCHED_TOKENS) -> int:
        """What one request of `context` tokens needs; vLLM refuses to start below it."""
        blocks = 0
        for kind in self.groups:
            if kind is GroupKind.FULL:
                blocks += -(-context // self.block_size)
            elif kind is GroupKind.SLIDING:
                window = min((self.sliding_window or context) - 1 + batched_tokens, context)
                blocks += -(-window // self.block_size) + 1
            else:
                blocks += 1
        return blocks * self.block_bytes


def uniform_layout(bytes_per_token: int) -> KvLayout:
    """The layout of a model whose every layer caches every token, from its bytes per token."""
    return KvLayout(
        block_size=BLOCK_SIZE,
        page_bytes=BLOCK_SIZE * bytes_per_token,
        layers_per_group=1,
        groups=(GroupKind.FULL,),
    )


def kv_layout(
    facts: ModelFacts,
    kv_dtype: str = "auto",
    tensor_parallel_size: int = 1,
    pipeline_parallel_size: int = 1,
    extra_layers: int = 0,
    spec_tokens: int = 0,
) -> KvLayout | None:
    """The KV-cache layout on one GPU; None if the facts are too thin.

    `extra_layers` are full-attention layers of a drafter the engine runs beside the model
    (an MTP layer, an EAGLE head); `spec_tokens` widens a linear-attention state.
    """
    element = kv_dtype_bytes(kv_dtype)
    per_token = layer_token_bytes(facts, element, tensor_parallel_size) if element else None
    layers = _self_attention_layers(facts)
    if per_token is None or layers is None or min(tensor_parallel_size, pipeline_parallel_size) < 1:
        return None
    counts, block, window = _layer_counts(facts, layers, extra_layers), BLOCK_SIZE, None
    if GroupKind.STATE in counts:
        state = _state_bytes(facts, tensor_parallel_size, spec_tokens)
        if state is None:
            return None
        block = BLOCK_SIZE * -(-state // (BLOCK_SIZE * per_token))
    if GroupKind.SLIDING in counts:
        window = facts.attention.sliding_window
    size, groups = _groups(counts)
    return KvLayout(
        block_size=block,
        page_bytes=block * per_token,
        layers_per_group=-(-size // pipeline_parallel_size),
        groups=groups,
        sliding_window=window,
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


def _self_attention_layers(facts: ModelFacts) -> int | None:
    if facts.num_layers is None or facts.attention.kind is None:
        return None
    return max(0, facts.num_layers - len(set(facts.attention.cross_attention_layers))) or None


def _layer_counts(facts: ModelFacts, layers: int, extra: int) -> dict[GroupKind, int]:
    """How many layers of each kind the engine caches for (a drafter's layers attend fully)."""
    attention = facts.attention
    full = len(attention.full_attention_layers)
    if attention.kind == "hybrid-linear":
        return {GroupKind.FULL: full + extra, GroupKind.STATE: layers - full}
    if attention.kind == "sliding-window":  # no full layers listed: every layer slides
        return {GroupKind.FULL: full + extra, GroupKind.SLIDING: layers - full}
    return {GroupKind.FULL: layers + extra}


def _groups(counts: dict[GroupKind, int]) -> tuple[int, tuple[GroupKind, ...]]:
    """vLLM's grouping: groups of the fewest layers of a kind, or of the most when close."""
    present = {kind: n for kind, n in counts.items() if n > 0}
    low, high = min(present.values()), max(present.values())
    size = high if high < low * 1.5 else low
    groups = tuple(kind for kind, n in present.items() for _ in range(-(-n // size)))
    return size, groups


def _state_bytes(facts: ModelFacts, tensor_parallel_size: int, spec_tokens: int) -> int | None:
    """One Gated-DeltaNet layer's state per sequence: its conv window and its recurrent state."""
    a = facts.attention
    dims = (a.linear_key_heads, a.linear_value_heads, a.linear_key_head_dim)
    if None in dims or a.linear_value_head_dim is None or a.linear_conv_kernel is None:
        return None
    key_heads, value_heads, key_dim = (int(d or 0) for d in dims)
    conv = (key_dim * key_heads * 2 + a.linear_value_head_dim * value_heads) // tensor_parallel_size
    conv_state = conv * (a.linear_conv_kernel - 1 + spec_tokens)
    recurrent = value_heads // tensor_parallel_size * key_dim * a.linear_value_head_dim
    return (conv_state + recurrent) * STATE_BYTES
