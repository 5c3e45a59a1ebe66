"""The KV cache as vLLM lays it out on one GPU: blocks, pages, groups; and the two
figures it logs from them (the KV cache size in tokens, the maximum concurrency).

Built by `fleet.facts.kv_estimate.kv_layout` from a model's facts (or by `uniform_layout`
from bytes per token); read by the planner's predictions, `fleet fit`, the health gate's
band check and `fleet explain log --model`. The rules are vLLM V1's
(`vllm/v1/core/kv_cache_utils.py`, `vllm/v1/kv_cache_interface.py`): `group_layers`
splits the layers of each kind into groups of one size, padding the short ones; one pool
of `num_blocks = budget // page // group_size` blocks is shared by the groups; one request
takes, per group, the blocks of its context (full attention), of its window plus the
tokens in flight plus one (sliding window: `cdiv(min(window - 1 + in_flight, context),
block) + 1`, `in_flight` = concurrent batches x prefill chunk, `SlidingWindowSpec.
max_admission_blocks_per_request`), or a state's blocks (one, or two plus a prefill
checkpoint in the Mamba cache mode `align`, `MambaSpec.max_memory_usage_bytes`) plus one
per speculative token, and the maximum concurrency is `num_blocks` over that. The cache
size vLLM logs is `num_blocks // groups * block_size` through 0.19
(`_report_kv_cache_config`), and `int(max_concurrency x max_model_len)` since 0.24
(`get_kv_cache_capacity`: 0.25.1's log states 94,135 tokens, no whole number of blocks,
from the same source lines as 0.24.0's; 0.20-0.23 were not read). Pure.
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


class LayoutRules(CoreModel):
    """What an engine's release and platform decide of a layout, beside the model.

    `block_size` tokens per attention block; a hybrid's attention block is a multiple of
    max(`kernel_block`, `block_size`); `in_flight_batches` prefill chunks a sliding window
    holds at once; `state_cache` the Mamba cache mode (`none`: one block per state and
    request; `align`: two, and a prefill checkpoint block for Mamba2);
    `tokens_from_concurrency` how the logged cache size is counted (`KvLayout.tokens`);
    `notes` the defaults that moved the figures, by the groups they concern.
    """

    block_size: int = BLOCK_SIZE
    kernel_block: int = BLOCK_SIZE
    in_flight_batches: int = 1
    state_cache: str = "none"
    tokens_from_concurrency: bool = False
    notes: tuple[tuple[str, str], ...] = ()

    def state_blocks(self, kind: str) -> int:
        """Blocks one request holds per state group, but speculative ones."""
        if self.state_cache != "align":
            return 1
        return 2 + (1 if kind == "mamba2" else 0)

    def notes_for(self, groups: set[GroupKind]) -> tuple[str, ...]:
        """The notes that concern a layout of these groups, in order."""
        kinds = {"all", *(str(kind) for kind in groups)}
        return tuple(text for concerns, text in self.notes if concerns in kinds)


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
    in_flight_batches: int = 1
    state_blocks: int = 1
    tokens_from_concurrency: bool = False
    assumptions: tuple[str, ...] = ()

    @property
    def block_bytes(self) -> int:
        """Memory one block costs across one layer of every group."""
        return self.page_bytes * self.layers_per_group

    def num_blocks(self, budget_bytes: int) -> int:
        """The blocks of the shared pool a budget holds (vLLM's `num_blocks`)."""
        return max(budget_bytes, 0) // self.page_bytes // self.layers_per_group

    def tokens(self, budget_bytes: int, context: int | None = None) -> int:
        """The `GPU KV cache size` a budget gives: the maximum concurrency at `context` times
        `context` where the release logs that (`tokens_from_concurrency`), else whole blocks
        per group times the block size."""
        if self.tokens_from_concurrency and context:
            return int(self.max_concurrency(budget_bytes, context) * context)
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
                in_flight = self.in_flight_batches * self.batched_tokens
                window = min((self.sliding_window or context) - 1 + in_flight, context)
                blocks += -(-window // self.block_size) + 1
            else:
                blocks += self.state_blocks + self.spec_blocks
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
