"""The KV cache as vLLM lays it out on one GPU: blocks, pages, groups; and the two
figures it logs from them (the KV cache size in tokens, the maximum concurrency).

Built by `fleet.facts.kv_estimate.kv_layout` from a model's facts (or by `uniform_layout`
from bytes per token); read by the planner's predictions, `fleet fit`, the health gate's
band check and `fleet explain log --model`. The rules are vLLM V1's
(`vllm/v1/core/kv_cache_utils.py`, `vllm/v1/kv_cache_interface.py`): `group_layers`
splits the layers of each kind into groups of one size, padding the short ones; one pool
of `num_blocks = budget // page // group_size` blocks is shared by the groups; the cache
size is `num_blocks // groups * block_size`; one request takes, per group, the blocks of
its context (full attention), of its window plus a prefill chunk plus one (sliding
window), or one state block plus one per speculative token (a linear-attention or Mamba
state), and the maximum concurrency is `num_blocks` over that. Pure.
"""

from __future__ import annotations

import math
from enum import StrEnum

from fleet.base import CoreModel

BLOCK_SIZE = 16  # tokens per block by default (vLLM's on CUDA)
BATCHED_TOKENS = 8192  # the default prefill chunk of a GPU server (vLLM's `serve`)


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
    spec_blocks: int = 0
    batched_tokens: int = BATCHED_TOKENS

    @property
    def block_bytes(self) -> int:
        """Memory one block costs across one layer of every group."""
        return self.page_bytes * self.layers_per_group

    def num_blocks(self, budget_bytes: int) -> int:
        """The blocks of the shared pool a budget holds (vLLM's `num_blocks`)."""
        return max(budget_bytes, 0) // self.page_bytes // self.layers_per_group

    def tokens(self, budget_bytes: int) -> int:
        """The `GPU KV cache size` a budget gives: whole blocks per group times block size."""
        return self.num_blocks(budget_bytes) // len(self.groups) * self.block_size

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
        return self.num_blocks(budget_bytes) / self.request_blocks(context)

    def budget_for_concurrency(self, concurrency: float, context: int) -> int:
        """The smallest budget whose `max_concurrency` at `context` is at least `concurrency`."""
        blocks = math.ceil(round(concurrency * self.request_blocks(context), 6))
        return blocks * self.block_bytes

    def largest_budget_for_concurrency(self, concurrency: float, context: int) -> int:
        """The largest budget whose `max_concurrency` at `context` is at most `concurrency`."""
        blocks = math.floor(round(concurrency * self.request_blocks(context), 6))
        return max((blocks + 1) * self.block_bytes - 1, 0)

    def request_blocks(self, context: int) -> int:
        """The blocks of the pool one request of `context` tokens takes, over every group."""
        blocks = 0
        for kind in self.groups:
            if kind is GroupKind.FULL:
                blocks += -(-context // self.block_size)
            elif kind is GroupKind.SLIDING:
                window = min((self.sliding_window or context) - 1 + self.batched_tokens, context)
                blocks += -(-window // self.block_size) + 1
            else:
                blocks += 1 + self.spec_blocks
        return max(blocks, 1)

    def request_bytes(self, context: int) -> int:
        """What one request of `context` tokens needs; vLLM refuses to start below it."""
        return self.request_blocks(context) * self.block_bytes


def uniform_layout(bytes_per_token: int) -> KvLayout:
    """The layout of a model whose every layer caches every token, from its bytes per token."""
    return KvLayout(
        block_size=BLOCK_SIZE,
        page_bytes=BLOCK_SIZE * bytes_per_token,
        layers_per_group=1,
        groups=(GroupKind.FULL,),
    )


def group_layers(
    counts: dict[GroupKind, int], near_most: bool = True
) -> tuple[int, tuple[GroupKind, ...]]:
    """vLLM's grouping (`_get_kv_cache_groups_uniform_page_size`): groups of the fewest
    layers of a kind, or of the most when under 1.5x the fewest (`near_most`, vLLM 0.12 on);
    a kind's last group is padded to the group size. Returns the group size and each
    group's kind."""
    present = {kind: n for kind, n in counts.items() if n > 0}
    if not present:
        return 1, ()
    low, high = min(present.values()), max(present.values())
    size = high if near_most and high < low * 1.5 else low
    groups = tuple(kind for kind, n in present.items() for _ in range(-(-n // size)))
    return size, groups


def padding_layers(counts: dict[GroupKind, int]) -> int:
    """The padding layers vLLM adds (`Add N padding layers`), over every kind."""
    size, _ = group_layers(counts)
    return sum(-n % size for n in counts.values() if n > 0)
