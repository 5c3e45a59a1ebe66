"""The vLLM stand-in's runtime failures: the out-of-memory switch kills the engine the way
vLLM V1 dies (500, then /health 503, then exit), and the stuck switch holds generation
while requests stay counted as running (the reconcile watchdog's case)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from fleet.engines.vllm import read_log
from fleet.engines.vllm.errors import ErrorKind
from tests.unit.lab_engine.standin import (
    Image,
    StandIn,
    get,
    metrics,
    post,
    request,
    sample,
    start_vllm,
    stream,
    wait_for,
)

OOM_LINES = (
    "EngineCore encountered a fatal error.",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate",
    "AsyncLLM output_handler failed.",
    "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.",
    '"POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error',
    "INFO:     Shutting down",
)


def serve(image: Image, model: Path, running: list[StandIn], env: dict[str, str]) -> StandIn:
    """A stand-in serving `alpha` (8k context) with the given switches."""
    args = [str(model), "--served-model-name", "alpha", "--max-model-len", "8192"]
    standin = start_vllm(image, args, {"FLEET_LAB_TOKEN_RATE": "500", **env})
    running.append(standin)
    return standin.wait_healthy()


def chat(words: int) -> dict[str, object]:
    """A chat request with a prompt of `words` words (+4 template tokens)."""
    return {"model": "alpha", "messages": [{"role": "user", "content": " ".join(["w"] * words)}]}


def test_a_deep_prompt_runs_the_engine_out_of_memory(
    image: Image, vllm_model: Path, running: list[StandIn]
) -> None:
    engine = serve(
        image,
        vllm_model,
        running,
        {"FLEET_LAB_OOM_AT_TOKENS": "1000", "FLEET_LAB_DEATH_SECONDS": "0.6"},
    )
    assert post(engine.url("/v1/chat/completions"), chat(995))[0] == 200, "999 tokens fit"
    assert image.usage(), "the engine holds its GPU"
    status, body = request("POST", engine.url("/v1/chat/completions"), chat(996))
    assert (status, body) == (500, b"")
    assert request("GET", engine.url("/health"))[0] == 503
    assert request("POST", engine.url("/v1/chat/completions"), chat(1))[0] == 500
    assert engine.wait_exit(timeout=5) == 1
    log = engine.log()
    for line in OOM_LINES:
        assert line in log, line
    assert log.index("EngineCore encountered a fatal error.") < log.index("EngineDeadError")
    assert image.usage() == [], "a dead process's GPU memory is freed"
    report = read_log(log)
    assert [e.kind for e in report.errors] == [ErrorKind.CUDA_OOM]


def test_a_deep_streamed_prompt_ends_its_stream_with_the_engine_error(
    image: Image, vllm_model: Path, running: list[StandIn]
) -> None:
    engine = serve(image, vllm_model, running, {"FLEET_LAB_OOM_AT_TOKENS": "50"})
    _, events = stream(engine.url("/v1/chat/completions"), chat(60))
    assert events[0][1]["error"]["code"] == 500
    assert "EngineCore encountered an issue" in events[0][1]["error"]["message"]
    assert events[-1][1] == "[DONE]"
    assert engine.wait_exit(timeout=5) == 1
    assert "Error in chat completion stream generator." in engine.log()


def test_the_stuck_switch_holds_requests_running_without_tokens(
    image: Image, vllm_model: Path, running: list[StandIn]
) -> None:
    engine = serve(image, vllm_model, running, {})
    switch = Path(engine.env["FLEET_LAB_STUCK_FILE"])
    switch.touch()
    results: list[int] = []
    worker = threading.Thread(
        target=lambda: results.append(post(engine.url("/v1/chat/completions"), chat(3))[0])
    )
    worker.start()
    wait_for(engine, lambda m: sample(m, "vllm:num_requests_running") > 0)
    time.sleep(0.2)  # held: nothing is generated meanwhile
    stuck = metrics(get(engine.url("/metrics"))[1])
    assert sample(stuck, "vllm:num_requests_running") == 1
    assert sample(stuck, "vllm:generation_tokens_total") == 0
    assert request("GET", engine.url("/health"))[0] == 200, "vLLM's /health does not notice"
    time.sleep(0.2)
    assert sample(metrics(get(engine.url("/metrics"))[1]), "vllm:generation_tokens_total") == 0
    switch.unlink()
    worker.join(timeout=5)
    assert results == [200]
    assert sample(metrics(get(engine.url("/metrics"))[1]), "vllm:generation_tokens_total") == 5


def test_stuck_from_the_start(image: Image, vllm_model: Path, running: list[StandIn]) -> None:
    engine = serve(image, vllm_model, running, {"FLEET_LAB_STUCK": "1"})
    errors: list[OSError] = []

    def ask() -> None:
        try:
            post(engine.url("/v1/completions"), {"prompt": "x"})
        except OSError as err:  # the engine is stopped under it
            errors.append(err)

    worker = threading.Thread(target=ask)
    worker.start()
    wait_for(engine, lambda m: sample(m, "vllm:num_requests_running") > 0)
    time.sleep(0.2)  # held: nothing is generated meanwhile
    m = metrics(get(engine.url("/metrics"))[1])
    assert sample(m, "vllm:num_requests_running") == 1
    assert sample(m, "vllm:generation_tokens_total") == 0
    engine.stop()
    worker.join(timeout=5)
    assert len(errors) == 1
