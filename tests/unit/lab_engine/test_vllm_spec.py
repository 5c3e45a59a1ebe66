"""With --speculative-config, vLLM's spec-decode counters follow the configured acceptance
rate as tokens are generated: accepted / draft tokens == FLEET_LAB_SPEC_ACCEPTANCE, mean
acceptance length 1 + accepted / drafts, and the per-position counters add up."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from tests.unit.lab_engine.standin import (
    Image,
    StandIn,
    get,
    metrics,
    post,
    sample,
    start_vllm,
    wait_for,
)

SPEC = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}


def serve(image: Image, model: Path, running: list[StandIn], spec: bool, rate: str) -> StandIn:
    """A stand-in serving `alpha`, with or without speculative decoding."""
    args = [str(model), "--served-model-name", "alpha", "--max-model-len", "8192"]
    args += ["--speculative-config", json.dumps(SPEC)] if spec else []
    env = {"FLEET_LAB_TOKEN_RATE": rate, "FLEET_LAB_SPEC_ACCEPTANCE": "0.62"}
    standin = start_vllm(image, args, env)
    running.append(standin)
    return standin.wait_healthy()


def ask(engine: StandIn, tokens: int) -> None:
    """One whole completion of `tokens` tokens."""
    body = {"model": "alpha", "messages": [{"role": "user", "content": "go"}], "max_tokens": tokens}
    assert post(engine.url("/v1/chat/completions"), body)[0] == 200


def test_counters_follow_the_configured_acceptance_rate(
    image: Image, vllm_model: Path, running: list[StandIn]
) -> None:
    engine = serve(image, vllm_model, running, spec=True, rate="4000")
    for tokens in (40, 57, 33, 70):
        ask(engine, tokens)
    m = metrics(get(engine.url("/metrics"))[1])
    drafts = sample(m, "vllm:spec_decode_num_drafts_total")
    drafted = sample(m, "vllm:spec_decode_num_draft_tokens_total")
    accepted = sample(m, "vllm:spec_decode_num_accepted_tokens_total")
    assert drafted == 3 * drafts
    assert accepted / drafted == pytest.approx(0.62, rel=0.05)
    per_pos = [v for k, v in sorted(m.items()) if "accepted_tokens_per_pos_total" in k]
    assert len(per_pos) == 3 and sum(per_pos) == accepted
    assert per_pos[0] >= per_pos[1] >= per_pos[2], "a draft is accepted as a prefix"
    generated = sample(m, "vllm:generation_tokens_total")
    assert generated == 40 + 57 + 33 + 70
    # each request: one token from the prefill, then (accepted + 1) per verified draft
    assert generated - 4 <= drafts + accepted <= generated - 4 + 4 * 3
    assert 1 + accepted / drafts == pytest.approx(1 + 3 * 0.62, rel=0.05), "mean acceptance length"


def test_counters_grow_while_a_request_runs(
    image: Image, vllm_model: Path, running: list[StandIn]
) -> None:
    engine = serve(image, vllm_model, running, spec=True, rate="40")
    thread = threading.Thread(target=ask, args=(engine, 30))
    thread.start()
    during = wait_for(engine, lambda m: sample(m, "vllm:spec_decode_num_drafts_total") > 0)
    thread.join()
    after = metrics(get(engine.url("/metrics"))[1])
    assert sample(during, "vllm:num_requests_running") == 1
    assert 0 < sample(during, "vllm:generation_tokens_total") < 30
    assert sample(during, "vllm:spec_decode_num_drafts_total") > 0
    assert sample(after, "vllm:generation_tokens_total") == 30
    assert sample(after, "vllm:num_requests_running") == 0
    assert sample(after, "vllm:request_success_total") == 1


def test_no_spec_counters_without_a_speculative_config(
    image: Image, vllm_model: Path, running: list[StandIn]
) -> None:
    engine = serve(image, vllm_model, running, spec=False, rate="4000")
    ask(engine, 10)
    text = get(engine.url("/metrics"))[1]
    assert "spec_decode" not in text
    assert sample(metrics(text), "vllm:generation_tokens_total") == 10
