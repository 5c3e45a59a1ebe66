"""The real vLLM (CPU build, tests/lab/real/vllm.py) holds to fleet's facts: one start of
`vllm serve` from the venv as a plain process, serving the lab's tiny Llama with `ngram`
speculative decoding, and everything asked of that one start.

- What fleet reads off its start-up log equals what its API reports
  (tests/lab/real/contract_vllm.py, the contract the stand-in is held to as well), and is
  what the tiny Llama's layout gives for the KV budget.
- `/health` refuses connections until the engine is ready: there is no 503 phase.
- fleet's bench reads speculative acceptance off the real `vllm:spec_decode_*` counters.

Skipped, saying why, unless the real vLLM is installed (FLEET_REAL_ENGINES=0 leaves it out).
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fleet.engines import engine_for
from fleet.engines.vllm.log import parse_vllm_log
from fleet.facts.engine_metrics import sum_samples
from fleet.observed.bench import speculative
from fleet.spec.models import Seat, Speculative
from tests.lab.real import require
from tests.lab.real import vllm as real
from tests.lab.real.contract_vllm import mismatches
from tests.unit.lab_engine.standin import free_port
from tests.unit.lab_engine.standin import metrics as samples

pytestmark = pytest.mark.lab

NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}
CONTEXT = 2048
READY_WITHIN = 420.0  # seconds; 40-80 s here when the machine is not crowded
# One token of the tiny Llama's KV cache: 2 layers x (K, V) x 2 KV heads x 32 x 2 bytes.
TOKEN_BYTES = 2 * 2 * 2 * 32 * 2


@dataclass
class Served:
    """The running engine, its log and what /health answered while it started."""

    proc: subprocess.Popen[bytes]
    port: int
    log_path: Path
    health_before_ready: list[str]

    def get(self, path: str) -> tuple[int, str]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            conn.request("GET", path)
            reply = conn.getresponse()
            return reply.status, reply.read().decode()
        finally:
            conn.close()

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
            reply = conn.getresponse()
            data = reply.read()
            assert reply.status == 200, data
            return dict(json.loads(data))
        finally:
            conn.close()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def health(port: int) -> str:
    """What /health answers now: its status, or `refused`."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", "/health")
        return str(conn.getresponse().status)
    except ConnectionRefusedError:
        return "refused"
    finally:
        conn.close()


def wait_ready(proc: subprocess.Popen[bytes], port: int, log: Path) -> list[str]:
    """Poll /health until 200; every answer before it (fails with the log if it dies)."""
    seen: list[str] = []
    deadline = time.monotonic() + READY_WITHIN
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"vLLM exited {proc.returncode}:\n{log.read_text()[-6000:]}")
        answer = health(port)
        if answer == "200":
            return seen
        seen.append(answer)
        time.sleep(0.5)
    raise AssertionError(f"vLLM not healthy after {READY_WITHIN} s:\n{log.read_text()[-6000:]}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the engine's process group (API server, EngineCore, worker), then KILL."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """`vllm serve` of the tiny Llama with ngram speculative decoding, healthy."""
    require(real.INSTALLED, "vLLM")
    model, port = real.model_dir(), free_port()
    argv = [str(real.VENV / "bin" / "vllm"), "serve", str(model)]
    argv += ["--served-model-name", real.SERVED_NAME, "--host", "127.0.0.1"]
    argv += ["--port", str(port), "--max-model-len", str(CONTEXT)]
    argv += ["--kv-cache-memory-bytes", str(real.KV_CACHE_BYTES), *real.SEAT_ARGS]
    argv += ["--speculative-config", json.dumps(NGRAM)]
    log = tmp_path_factory.mktemp("real-vllm") / "vllm.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            argv,
            env=real.serve_env(),
            cwd=real.RUN_DIR,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield Served(proc, port, log, wait_ready(proc, port, log))
    finally:
        stop(proc)


def test_log_facts_equal_what_the_api_reports(served: Served) -> None:
    replies = [served.get(path) for path in ("/version", "/v1/models", "/metrics")]
    assert [status for status, _ in replies] == [200, 200, 200]
    version, models, metrics = (body for _, body in replies)
    assert mismatches(served.log(), json.loads(version), json.loads(models), metrics) == []


def test_log_states_the_kv_cache_the_budget_buys(served: Served) -> None:
    report = parse_vllm_log(served.log())
    assert report.version == "0.32.0"
    assert report.served_names == (real.SERVED_NAME,)
    assert report.max_model_len == CONTEXT
    assert report.kv_cache_gib == 0.25
    assert report.kv_cache_tokens == real.KV_CACHE_BYTES // TOKEN_BYTES == 524_288
    assert report.max_concurrency == 524_288 / CONTEXT
    assert report.speculative is not None
    assert (report.speculative.method, report.speculative.num_tokens) == ("ngram", 3)


def test_health_refuses_connections_until_ready(served: Served) -> None:
    assert served.health_before_ready, "the engine was ready at once: nothing was observed"
    assert set(served.health_before_ready) == {"refused"}


def seat() -> Seat:
    """The seat fleet would have for this engine (what bench reads the counters for)."""
    return Seat(
        name="tiny",
        host="cpubox",
        gpus=(),
        image=f"{real.IMAGE}:{real.TAG}",
        model=str(real.model_dir()),
        served_name=real.SERVED_NAME,
        context=CONTEXT,
        kv_cache_bytes=real.KV_CACHE_BYTES,
        speculative=Speculative(method="ngram", num_tokens=3),
        port=8000,
    )


def test_bench_reads_acceptance_from_the_real_counters(served: Served) -> None:
    engine = engine_for("vllm")

    def counts() -> dict[str, float]:
        status, text = served.get("/metrics")
        assert status == 200
        return engine.speculative_counts(sum_samples(text), seat())

    before = counts()
    prompt = "a b c a b c a b c a b c a b c a b c"  # greedy decoding repeats: drafts match
    for _ in range(3):
        body = {"model": real.SERVED_NAME, "prompt": prompt, "max_tokens": 48, "temperature": 0}
        assert served.post("/v1/completions", body)["usage"]["completion_tokens"] == 48
    after = counts()
    delta = {
        key: after[key] - before.get(key, 0.0) for key in ("accepted", "draft_tokens", "drafts")
    }
    assert delta["drafts"] > 0 and delta["draft_tokens"] <= 3 * delta["drafts"]
    measured = speculative(delta["accepted"], delta["draft_tokens"], delta["drafts"])
    assert measured is not None
    assert 0 < measured.acceptance_rate <= 1
    assert 1 < measured.mean_acceptance_length <= 1 + 3
    # what fleet read agrees with vLLM's own per-position counters
    per_position = [
        v for k, v in samples(served.get("/metrics")[1]).items() if "_per_pos_total" in k
    ]
    assert len(per_position) == 3 and sum(per_position) == after["accepted"]
