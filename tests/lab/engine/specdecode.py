"""Speculative-decoding counters driven by a configured acceptance rate.

As in vLLM V1 (vllm/v1/spec_decode/metrics.py, SpecDecodingStats.observe_draft): each
decode step after the prefill verifies one draft of `k` proposed tokens (k =
num_speculative_tokens) and accepts a prefix of `a` of them, 0 <= a <= k; the step then
yields a + 1 tokens (the accepted ones and the bonus token) and counts
num_drafts += 1, num_draft_tokens += k, num_accepted_tokens += a and one accepted token at
each position < a. The stand-in picks `a` so that accepted / draft tokens stays within
half a token of the configured rate over the engine's life (a running credit, no
randomness), so the mean acceptance length is 1 + accepted / drafts. The first token of
a request comes from the prefill, as in vLLM, and drafts nothing.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any


@dataclass
class DraftState:
    """Per request: tokens left from the last verified draft."""

    prefilled: bool = False
    pending: int = 0


@dataclass
class SpecDecode:
    """The engine-wide counters vLLM exports as vllm:spec_decode_*."""

    num_spec_tokens: int
    acceptance: float
    drafts: int = 0
    draft_tokens: int = 0
    accepted: int = 0
    per_position: list[int] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        self.acceptance = min(max(self.acceptance, 0.0), 1.0)
        self.per_position = [0] * self.num_spec_tokens

    @classmethod
    def from_config(cls, spec: dict[str, Any], acceptance: float) -> SpecDecode:
        """From --speculative-config (num_speculative_tokens, default 1)."""
        k = int(spec.get("num_speculative_tokens") or 1)
        return cls(max(k, 1), acceptance)

    def verify_draft(self) -> int:
        """One verified draft; returns how many of its tokens were accepted."""
        with self.lock:
            self.drafts += 1
            self.draft_tokens += self.num_spec_tokens
            target = int(self.acceptance * self.draft_tokens + 0.5)
            took = min(max(target - self.accepted, 0), self.num_spec_tokens)
            self.accepted += took
            for position in range(took):
                self.per_position[position] += 1
            return took

    def on_token(self, state: DraftState) -> None:
        """Account one generated token of a request."""
        if not state.prefilled:
            state.prefilled = True
            return
        if state.pending == 0:
            state.pending = self.verify_draft() + 1
        state.pending -= 1

    def snapshot(self) -> tuple[int, int, int, list[int]]:
        """(drafts, draft tokens, accepted tokens, accepted per position)."""
        with self.lock:
            return self.drafts, self.draft_tokens, self.accepted, list(self.per_position)
