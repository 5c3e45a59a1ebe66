"""The llama-server stand-in's HTTP side: 503 `Loading model` until the model is loaded,
then llama-server's OpenAI API at the configured token rate, /props, /slots and /metrics."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tests.unit.lab_engine.standin import (
    Image,
    StandIn,
    get,
    metrics,
    metrics_while_posting,
    post,
    request,
    sample,
    start_llama,
    stream,
    wait_for,
)
from tests.waiting import wait_until

LOADING = {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}


def serve(
    image: Image, model: Path, running: list[StandIn], extra: list[str], env: dict[str, str]
) -> StandIn:
    """llama-server on one GPU, two 4096-token slots."""
    args = ["-m", str(model), "-c", "8192", "-np", "2", "-ngl", "999", *extra]
    standin = start_llama(image, args, {"FLEET_LAB_TOKEN_RATE": "50", **env})
    running.append(standin)
    return standin


def test_health_is_503_loading_model_until_the_model_is_loaded(
    image: Image, gguf_dir: Path, running: list[StandIn]
) -> None:
    engine = serve(
        image,
        gguf_dir / "qwen3-0.6b-q4_k_m.gguf",
        running,
        ["-a", "tiny"],
        {"FLEET_LAB_LOAD_SECONDS": "0.8"},
    )

    def answered() -> tuple[int, object] | None:
        try:
            return get(engine.url("/health"))
        except OSError:  # not listening yet
            return None

    assert wait_until(answered, 5, "/health to answer", interval=0.02) == (503, LOADING)
    assert get(engine.url("/v1/models")) == (503, LOADING), "every route waits for the model"
    engine.wait_healthy()
    assert get(engine.url("/health")) == (200, {"status": "ok"})
    models = get(engine.url("/v1/models"))[1]
    assert [m["id"] for m in models["data"]] == ["tiny"]
    assert models["data"][0]["owned_by"] == "llamacpp"
    assert models["data"][0]["meta"]["n_ctx_train"] == 40960
    props = get(engine.url("/props"))[1]
    assert props["total_slots"] == 2 and props["model_alias"] == "tiny"
    assert props["default_generation_settings"]["n_ctx"] == 4096
    slots = get(engine.url("/slots"))[1]
    assert [(s["id"], s["n_ctx"], s["is_processing"]) for s in slots] == [
        (0, 4096, False),
        (1, 4096, False),
    ]
    status, body = get(engine.url("/metrics"))
    assert status == 501 and body["error"]["type"] == "not_supported_error", "needs --metrics"


def test_chat_streams_at_the_token_rate_in_llama_servers_shape(
    image: Image, gguf_dir: Path, running: list[StandIn]
) -> None:
    model = gguf_dir / "qwen3-0.6b-q4_k_m.gguf"
    engine = serve(image, model, running, [], {}).wait_healthy()
    assert get(engine.url("/v1/models"))[1]["data"][0]["id"] == str(model), "no alias: the path"
    body = {"messages": [{"role": "user", "content": "hi there"}], "max_tokens": 21}
    sent, events = stream(engine.url("/v1/chat/completions"), body)
    assert events[0][1]["choices"][0]["delta"] == {"role": "assistant", "content": None}
    tokens = [(at, e) for at, e in events[1:-1] if e["choices"][0]["delta"].get("content")]
    assert len(tokens) == 21
    # never sooner than 20 tokens at 50/s after the request; a busy machine only adds
    assert tokens[-1][0] - sent >= 20 / 50
    assert tokens[-1][0] - tokens[0][0] <= 20 / 50 + 1.0
    final = events[-2][1]
    assert final["choices"][0]["finish_reason"] == "length"
    assert final["timings"]["predicted_n"] == 21 and final["timings"]["prompt_n"] == 6
    assert events[-1][1] == "[DONE]"
    whole = post(engine.url("/v1/chat/completions"), {**body, "max_tokens": 4})[1]
    assert whole["object"] == "chat.completion" and whole["usage"]["completion_tokens"] == 4
    assert post(engine.url("/tokenize"), {"content": "a b c"})[1]["tokens"].__len__() == 3


def test_metrics_count_processing_and_deferred_requests(
    image: Image, gguf_dir: Path, running: list[StandIn]
) -> None:
    engine = serve(image, gguf_dir / "qwen3-0.6b-q4_k_m.gguf", running, ["--metrics"], {})
    engine.wait_healthy()
    body = {"messages": [{"role": "user", "content": "go"}], "max_tokens": 15}
    during, after = metrics_while_posting(
        engine, body, 3, ("llamacpp:requests_processing", "llamacpp:requests_deferred")
    )
    assert sample(during, "llamacpp:requests_processing") == 2, "two slots"
    assert sample(during, "llamacpp:requests_deferred") == 1
    assert sample(after, "llamacpp:tokens_predicted_total") == 45
    assert sample(after, "llamacpp:prompt_tokens_total") == 3 * 5
    assert sample(after, "llamacpp:requests_processing") == 0
    assert sample(after, "llamacpp:predicted_tokens_seconds") == pytest.approx(50, rel=0.10)


def test_a_prompt_beyond_the_slot_context_is_refused(
    image: Image, gguf_dir: Path, running: list[StandIn]
) -> None:
    engine = serve(image, gguf_dir / "qwen3-0.6b-q4_k_m.gguf", running, [], {}).wait_healthy()
    body = {"messages": [{"role": "user", "content": " ".join(["w"] * 5000)}]}
    status, answer = post(engine.url("/v1/chat/completions"), body)
    assert status == 400
    assert answer["error"]["type"] == "exceed_context_size_error"
    assert answer["error"]["n_ctx"] == 4096
    assert request("GET", engine.url("/nope"))[0] == 404


def test_the_stuck_switch_holds_a_slot_without_predicting(
    image: Image, gguf_dir: Path, running: list[StandIn]
) -> None:
    engine = serve(image, gguf_dir / "qwen3-0.6b-q4_k_m.gguf", running, ["--metrics"], {})
    engine.wait_healthy()
    switch = Path(engine.env["FLEET_LAB_STUCK_FILE"])
    switch.touch()
    body = {"messages": [{"role": "user", "content": "go"}], "max_tokens": 3}
    worker = threading.Thread(target=post, args=(engine.url("/v1/chat/completions"), body))
    worker.start()
    wait_for(engine, lambda m: sample(m, "llamacpp:requests_processing") > 0)
    time.sleep(0.2)  # held: nothing is predicted meanwhile
    stuck = metrics(get(engine.url("/metrics"))[1])
    assert sample(stuck, "llamacpp:requests_processing") == 1
    assert sample(stuck, "llamacpp:tokens_predicted_total") == 0
    assert get(engine.url("/health"))[0] == 200
    switch.unlink()
    worker.join(timeout=5)
    assert sample(metrics(get(engine.url("/metrics"))[1]), "llamacpp:tokens_predicted_total") == 3
