"""`fleet bench` measures the vLLM stand-in: streamed tokens arrive at FLEET_LAB_TOKEN_RATE,
the first one after prompt tokens / FLEET_LAB_PREFILL_RATE, and requests beyond
--max-num-seqs wait (and are counted as waiting).

The stand-in sleeps until each deadline, so what a client sees is never sooner than the
rates say: that is the bound asserted exactly. A busy machine only makes it later, so the
upper bound is generous (SLACK, seconds a loaded two-core machine cannot add to a wait
here): on the longer waits (0.4 s and 0.5 s) it still tells a rate from one ten times
slower.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.unit.lab_engine.standin import (
    Image,
    StandIn,
    metrics_while_posting,
    post,
    sample,
    start_vllm,
    stream,
)

RATE, PREFILL = 50.0, 1000.0
SLACK = 3.0  # seconds: generous, see the docstring


@pytest.fixture(scope="module")
def engine(module_image: Image, vllm_model: Path) -> Iterator[StandIn]:
    """One vLLM stand-in at 50 tokens/s and 1000 prefill tokens/s, one running request."""
    env = {"FLEET_LAB_TOKEN_RATE": str(RATE), "FLEET_LAB_PREFILL_RATE": str(PREFILL)}
    args = [
        str(vllm_model),
        "--served-model-name",
        "alpha",
        "--max-model-len",
        "8192",
        "--max-num-seqs",
        "1",
    ]
    standin = start_vllm(module_image, args, env).wait_healthy()
    yield standin
    standin.stop()


def chat(words: int, max_tokens: int) -> dict[str, Any]:
    """A chat request whose prompt is `words` words (+4 template tokens)."""
    content = " ".join(f"w{i}" for i in range(words))
    return {
        "model": "alpha",
        "messages": [{"role": "user", "content": content}],
        "max_tokens": max_tokens,
        "stream_options": {"include_usage": True},
    }


def content_events(events: list[tuple[float, Any]]) -> list[tuple[float, str]]:
    """(arrival, text) of the chunks that carry generated text."""
    out = []
    for at, event in events:
        if event == "[DONE]" or not event.get("choices"):
            continue
        text = event["choices"][0]["delta"].get("content")
        if text:
            out.append((at, text))
    return out


def test_streamed_tokens_arrive_one_per_chunk_at_the_token_rate(engine: StandIn) -> None:
    n = 26
    sent, events = stream(engine.url("/v1/chat/completions"), chat(3, n))
    tokens = content_events(events)
    assert len(tokens) == n, "one token per chunk"
    assert all(len(text.split()) == 1 for _, text in tokens)
    decode = (n - 1) / RATE  # 0.5 s
    assert tokens[-1][0] - sent >= (3 + 4) / PREFILL + decode, "never faster than the rates"
    assert tokens[-1][0] - tokens[0][0] <= decode + SLACK, "decode tokens/s"
    assert events[-1][1] == "[DONE]"
    assert events[-2][1]["usage"] == {
        "prompt_tokens": 7,
        "completion_tokens": n,
        "total_tokens": 7 + n,
    }


@pytest.mark.parametrize("words", [96, 396])
def test_time_to_first_token_is_prompt_tokens_over_the_prefill_rate(
    engine: StandIn, words: int
) -> None:
    sent, events = stream(engine.url("/v1/chat/completions"), chat(words, 2))
    first = content_events(events)[0][0]
    expected = (words + 4) / PREFILL  # 0.1 s and 0.4 s
    assert expected <= first - sent <= expected + SLACK


def test_a_whole_completion_takes_prefill_plus_decode(engine: StandIn) -> None:
    started = time.monotonic()
    status, body = post(engine.url("/v1/chat/completions"), {**chat(196, 11), "stream": False})
    took = time.monotonic() - started
    assert status == 200 and body["usage"]["prompt_tokens"] == 200
    assert body["choices"][0]["message"]["content"].startswith("This is alpha answering.")
    expected = 200 / PREFILL + 10 / RATE  # 0.4 s
    assert expected <= took <= expected + SLACK


def test_requests_beyond_max_num_seqs_wait_and_are_counted_waiting(engine: StandIn) -> None:
    during, after = metrics_while_posting(
        engine, chat(3, 20), 2, ("vllm:num_requests_running", "vllm:num_requests_waiting")
    )
    assert sample(during, "vllm:num_requests_running") == 1
    assert sample(during, "vllm:num_requests_waiting") == 1
    assert 0 < sample(during, "vllm:kv_cache_usage_perc") < 1
    assert (
        sample(after, "vllm:num_requests_running")
        == sample(after, "vllm:num_requests_waiting")
        == 0
    )
