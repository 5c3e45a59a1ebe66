"""vLLM's POST /tokenize counts prompts exactly as the completion endpoints do, so a bench
can size prompts to a depth in tokens before it sends them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.lab_engine.standin import Image, StandIn, post, start_vllm


@pytest.fixture(scope="module")
def engine(module_image: Image, vllm_model: Path) -> Iterator[StandIn]:
    """A fast vLLM stand-in serving `alpha` with a 4096-token context."""
    env = {"FLEET_LAB_TOKEN_RATE": "2000"}
    args = [str(vllm_model), "--served-model-name", "alpha", "--max-model-len", "4096"]
    standin = start_vllm(module_image, args, env).wait_healthy()
    yield standin
    standin.stop()


def test_a_text_prompt_is_one_token_per_word(engine: StandIn) -> None:
    status, body = post(
        engine.url("/tokenize"), {"model": "alpha", "prompt": "one two  three\nfour"}
    )
    assert status == 200
    assert body["count"] == 4 == len(body["tokens"])
    assert body["max_model_len"] == 4096
    assert body["token_strs"] is None
    again = post(
        engine.url("/tokenize"), {"prompt": "one two three four", "return_token_strs": True}
    )[1]
    assert again["tokens"] == body["tokens"], "deterministic ids"
    assert len(again["token_strs"]) == 4


def test_chat_messages_count_as_the_completion_usage_says(engine: StandIn) -> None:
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "how many tokens is this"}]},
    ]
    counted = post(engine.url("/tokenize"), {"model": "alpha", "messages": messages})[1]
    assert counted["count"] == 2 + 5 + 4, "words plus the template's four tokens"
    done = post(engine.url("/v1/chat/completions"), {"model": "alpha", "messages": messages})[1]
    assert done["usage"]["prompt_tokens"] == counted["count"]
    text = post(engine.url("/v1/completions"), {"model": "alpha", "prompt": "a b c"})[1]
    assert (
        text["usage"]["prompt_tokens"]
        == post(engine.url("/tokenize"), {"prompt": "a b c"})[1]["count"]
    )


def test_an_unknown_model_is_404_and_a_prompt_beyond_the_context_is_400(engine: StandIn) -> None:
    status, body = post(engine.url("/tokenize"), {"model": "beta", "prompt": "x"})
    assert status == 404 and body["error"]["type"] == "NotFoundError"
    deep = {"model": "alpha", "prompt": " ".join(["w"] * 4000), "max_tokens": 200}
    status, body = post(engine.url("/v1/completions"), deep)
    assert status == 400
    assert "maximum context length is 4096 tokens" in body["error"]["message"]
