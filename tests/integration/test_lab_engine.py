"""The stand-in vLLM engine in the lab: its start-up log parses with fleet's own parser
to the numbers it was configured with, it fails as vLLM does, and it serves the API."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fleet.engines.vllm.log import parse_vllm_log
from tests.lab import Lab
from tests.lab.compose import compose_text, seat
from tests.waiting import poll

pytestmark = pytest.mark.lab

GiB = 1 << 30
PROJECT = "labengine"
TINYLLAMA_TOKEN_BYTES = 2 * 22 * 4 * 64 * 2  # K+V, layers, KV heads, head_dim, bf16
LLAMA8B_TOKEN_BYTES = 2 * 32 * 8 * 128 * 2


@pytest.fixture(scope="module")
def engines(lab: Lab) -> Iterator[None]:
    """alpha: v0.18.0 with a pinned KV budget and ngram drafting; beta: a utilization
    fraction; gamma: v0.11.2 on rig through the nvidia runtime."""
    lab.reset()  # no seat an earlier module on this worker left on the GPUs
    alpha = seat(
        address=lab.address_of("tower"),
        model="TinyLlama-1.1B-Chat-FP8",
        served="alpha",
        port=8081,
        gpus=[2],
        env={"FLEET_LAB_TOKEN_RATE": "20"},
        args=[
            "--max-model-len",
            "2048",
            "--kv-cache-memory-bytes",
            "1GiB",
            "--speculative-config",
            '{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4}',
        ],
    )
    beta = seat(
        address=lab.address_of("tower"),
        model="stories42M-embed",
        served="beta",
        port=8082,
        gpus=[2],
        args=["--gpu-memory-utilization", "0.05", "--runner", "pooling"],
    )
    gamma = seat(
        address=lab.address_of("rig"),
        model="Llama-3.1-8B-Instruct",
        served="gamma",
        port=8083,
        gpus=[0],
        handover="runtime",
        image="vllm/vllm-openai:v0.11.2",
        args=["--max-model-len", "8192", "--kv-cache-memory-bytes", "2GiB"],
    )
    for host, services in (("tower", {"alpha": alpha, "beta": beta}), ("rig", {"gamma": gamma})):
        result = lab.compose_up(host, PROJECT, compose_text(services))
        assert result.returncode == 0, result.stderr
    yield
    for host in ("tower", "rig"):
        lab.compose_down(host, PROJECT)


def logs(lab: Lab, host: str, service: str) -> str:
    """An engine container's log, as fleet reads it (docker logs over SSH)."""
    return lab.run(host, f"docker logs {PROJECT}-{service}-1 2>&1", check=True).stdout


def weights_gib(lab: Lab, host: str, model: str) -> float:
    """Size of the model directory's checkpoint files."""
    files = (lab.hosts[host].models_dir / model).glob("*.safetensors")
    return sum(p.stat().st_size for p in files) / GiB


def test_v018_log_parses_to_the_configured_numbers(lab: Lab, engines: None) -> None:
    report = parse_vllm_log(logs(lab, "tower", "alpha"))
    tokens = GiB // (TINYLLAMA_TOKEN_BYTES * 16) * 16
    assert report.version == "0.18.0"
    assert report.served_names == ("alpha",)
    assert report.max_model_len == 2048
    assert report.kv_cache_gib == pytest.approx(1.0)
    assert report.kv_cache_tokens == tokens
    assert report.max_concurrency == pytest.approx(round(tokens / 2048, 2))
    assert report.weights_gib == pytest.approx(
        weights_gib(lab, "tower", "TinyLlama-1.1B-Chat-FP8"), abs=0.01
    )
    assert report.speculative is not None
    assert (report.speculative.method, report.speculative.num_tokens) == ("ngram", 4)


def test_v011_log_parses_to_the_configured_numbers(lab: Lab, engines: None) -> None:
    report = parse_vllm_log(logs(lab, "rig", "gamma"))
    assert report.version == "0.11.2"
    assert report.kv_cache_tokens == 2 * GiB // (LLAMA8B_TOKEN_BYTES * 16) * 16
    assert report.max_concurrency == pytest.approx(2.0)
    assert report.weights_gib == pytest.approx(
        weights_gib(lab, "rig", "Llama-3.1-8B-Instruct"), abs=0.001
    )


def test_utilization_fraction_sizes_kv_from_the_gpu(lab: Lab, engines: None) -> None:
    report = parse_vllm_log(logs(lab, "tower", "beta"))
    total = lab.hosts["tower"].spec.gpus[2].memory_mib / 1024
    weights = weights_gib(lab, "tower", "stories42M-embed")
    expected = 0.05 * total - weights - (0.4 + 0.02 * weights)
    assert report.kv_cache_gib == pytest.approx(expected, abs=0.01)


def docker_run(lab: Lab, host: str, image: str, *args: str, env: str = "") -> tuple[int, str]:
    """Run the stand-in once in the foreground on a host's GPU 0; (exit code, output)."""
    options = f"--rm --gpus device=0 -v /models:/models:ro {('-e ' + env) if env else ''}"
    result = lab.run(host, f"docker run {options} {image} {' '.join(args)} 2>&1", timeout=120)
    return result.returncode, result.stdout


FAILURES = [
    pytest.param(
        "vllm/vllm-openai:v0.18.0",
        ["/models/nope"],
        "",
        1,
        "Invalid repository ID or local directory specified: '/models/nope'",
        id="missing-model-dir",
    ),
    pytest.param(
        "vllm/vllm-openai:v0.18.0",
        ["/models/Qwen3-32B", "--max-model-len", "65536"],
        "",
        1,
        "User-specified max_model_len (65536) is greater than the derived max_model_len "
        "(max_position_embeddings=40960",
        id="max-model-len-above-config",
    ),
    pytest.param(
        "vllm/vllm-openai:v0.18.0",
        ["/models/Qwen3-32B", "--kv-cache-memory-bytes", "60GiB"],
        "",
        1,
        "torch.OutOfMemoryError: CUDA out of memory",
        id="kv-budget-does-not-fit",
    ),
    pytest.param(
        "vllm/vllm-openai:v0.18.0",
        ["/models/Qwen3-32B", "--kv-cache-memory-bytes", "1GiB"],
        "",
        1,
        "To serve at least one request with the model's max seq len (40960)",
        id="kv-budget-below-one-request",
    ),
    pytest.param(
        "vllm/vllm-openai:v0.9.2",
        ["--model", "/models/Qwen3-32B", "--kv-cache-memory-bytes", "1GiB"],
        "",
        2,
        "api_server.py: error: unrecognized arguments: --kv-cache-memory-bytes 1GiB",
        id="flag-too-new-for-v0.9.2",
    ),
    pytest.param(
        "vllm/vllm-openai:v0.18.0",
        ["/models/Qwen3-32B"],
        "FLEET_LAB_FAIL=crash",
        1,
        "illegal memory access",
        id="failure-switch-crash",
    ),
]


@pytest.mark.parametrize(("image", "args", "env", "code", "text"), FAILURES)
def test_engine_fails_as_vllm_does(
    lab: Lab, image: str, args: list[str], env: str, code: int, text: str
) -> None:
    exit_code, output = docker_run(lab, "tower", image, *args, env=env)
    assert exit_code == code, output
    assert text in output


def test_gpu_memory_of_other_engines_counts(lab: Lab, engines: None) -> None:
    """GPU 2 holds alpha and beta: a fraction above what is left is refused at start."""
    result = lab.run(
        "tower",
        "docker run --rm --gpus device=2 -v /models:/models:ro "
        "vllm/vllm-openai:v0.18.0 /models/stories42M-rerank "
        "--gpu-memory-utilization 0.99 2>&1",
        timeout=120,
    )
    assert result.returncode == 1
    assert "Free memory on device cuda:0" in result.stdout


def post(url: str, body: dict[str, Any], timeout: float = 30) -> tuple[int, Any]:
    """POST JSON; (status, decoded body)."""
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        with err:
            return err.code, json.loads(err.read())


def alpha_url(lab: Lab) -> str:
    """Base URL of the alpha seat (tower, port 8081)."""
    return f"http://{lab.address_of('tower')}:8081"


def test_chat_answers_with_the_served_name_and_404s_unknown_models(lab: Lab, engines: None) -> None:
    base = f"{alpha_url(lab)}/v1"
    with urllib.request.urlopen(f"{base}/models", timeout=10) as response:
        assert [m["id"] for m in json.loads(response.read())["data"]] == ["alpha"]
    status, body = post(
        f"{base}/chat/completions",
        {"model": "alpha", "messages": [{"role": "user", "content": "hi"}]},
    )
    assert status == 200
    assert body["model"] == "alpha" and "alpha" in body["choices"][0]["message"]["content"]
    status, body = post(f"{base}/chat/completions", {"model": "nope", "messages": []})
    assert status == 404
    assert body["error"]["message"] == "The model `nope` does not exist."


def gauge(name: str, url: str) -> float:
    """One vllm:* gauge from the engine's Prometheus text at `url`."""
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    line = next(ln for ln in text.splitlines() if ln.startswith(f"vllm:{name}{{"))
    assert 'model_name="alpha"' in line
    return float(line.rsplit(" ", 1)[1])


def test_streaming_keeps_a_request_running_at_the_token_rate(lab: Lab, engines: None) -> None:
    metrics = f"{alpha_url(lab)}/metrics"
    body = {
        "model": "alpha",
        "stream": True,
        "max_tokens": 30,
        "messages": [{"role": "user", "content": "count"}],
    }
    request = urllib.request.Request(
        f"{alpha_url(lab)}/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    events: list[str] = []
    started = time.monotonic()

    def consume() -> None:
        with urllib.request.urlopen(request, timeout=30) as response:
            events.extend(ln.decode().strip() for ln in response if ln.startswith(b"data: "))

    reader = threading.Thread(target=consume)
    reader.start()
    poll(lambda: gauge("num_requests_running", metrics) > 0, 10, interval=0.05)
    assert gauge("num_requests_running", metrics) == 1.0
    assert gauge("num_requests_waiting", metrics) == 0.0
    reader.join(timeout=30)
    assert time.monotonic() - started >= (30 - 1) / 20  # n tokens span (n - 1) / rate
    assert events[-1] == "data: [DONE]"
    words = "".join(
        json.loads(e[6:])["choices"][0]["delta"].get("content", "") for e in events[:-1]
    )
    assert words.startswith("This is alpha answering.")
    assert gauge("num_requests_running", metrics) == 0.0


def test_never_healthy_switch_keeps_health_failing(lab: Lab, tmp_path: Path) -> None:
    tower = lab.address_of("tower")
    service = seat(
        address=tower,
        model="stories42M-rerank",
        served="sick",
        port=8084,
        gpus=[1],
        env={"FLEET_LAB_FAIL": "never-healthy"},
        args=["--kv-cache-memory-bytes", "64MiB"],
    )
    try:
        lab.compose_up("tower", "labsick", compose_text({"sick": service}), wait=False)

        def serving() -> bool:
            try:
                urllib.request.urlopen(f"http://{tower}:8084/v1/models", timeout=2).close()
            except (urllib.error.URLError, OSError):
                return False
            return True

        poll(serving, 30, interval=0.3)
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(f"http://{tower}:8084/health", timeout=5)
        err.value.close()
        assert err.value.code == 503
    finally:
        lab.compose_down("tower", "labsick")
