"""What the real vLLM (CPU build) must show fleet, asked of one running engine: the
devbox's hand-made container (tests/integration/test_real_engines_lab.py), serving the
lab's tiny Llama with `ngram` speculative decoding, before fleet takes it over.

- What fleet reads off its start-up log equals what its API reports
  (tests/lab/real/contract_vllm.py, the contract the stand-in is held to as well), and is
  what the tiny Llama's layout gives for the KV budget.
- fleet's bench reads speculative acceptance off the real `vllm:spec_decode_*` counters,
  and what it reads agrees with vLLM's own per-position counters.

One engine for all of it: a start of the real vLLM costs a minute of CPU here.
"""

from __future__ import annotations

import json

from fleet.engines import engine_for
from fleet.engines.vllm.log import parse_vllm_log
from fleet.facts.engine_metrics import sum_samples
from fleet.observed.bench import speculative
from fleet.spec.models import Seat, Speculative
from tests.integration.helpers import request_url
from tests.lab.real import vllm as real
from tests.lab.real.contract_vllm import mismatches
from tests.unit.lab_engine.standin import metrics as samples

CONTEXT = 2048
# One token of the tiny Llama's KV cache: 2 layers x (K, V) x 2 KV heads x 32 x 2 bytes.
TOKEN_BYTES = 2 * 2 * 2 * 32 * 2


def text(url: str) -> str:
    reply = request_url(url, timeout=60)
    assert reply.status == 200, (url, reply.status, reply.body)
    return reply.body


def check_contract(base: str, log: str) -> None:
    """The log's facts equal the API's, and the KV cache is what the budget buys."""
    version, models = json.loads(text(f"{base}/version")), json.loads(text(f"{base}/v1/models"))
    assert mismatches(log, version, models, text(f"{base}/metrics")) == []
    report = parse_vllm_log(log)
    assert report.version == "0.32.0"
    assert report.served_names == (real.SERVED_NAME,)
    assert report.max_model_len == CONTEXT
    assert report.kv_cache_gib == 0.25
    assert report.kv_cache_tokens == real.KV_CACHE_BYTES // TOKEN_BYTES == 524_288
    assert report.max_concurrency == 524_288 / CONTEXT
    assert report.speculative is not None
    assert (report.speculative.method, report.speculative.num_tokens) == ("ngram", 3)


def check_acceptance(base: str, seat: Seat) -> None:
    """Bench's acceptance figures, from the real counters, as fleet's own code reads them."""
    engine = engine_for("vllm")

    def counts() -> dict[str, float]:
        return engine.speculative_counts(sum_samples(text(f"{base}/metrics")), seat)

    before = counts()
    prompt = "a b c a b c a b c a b c a b c a b c"  # greedy decoding repeats: drafts match
    for _ in range(3):
        body = {"model": real.SERVED_NAME, "prompt": prompt, "max_tokens": 48, "temperature": 0}
        reply = request_url(f"{base}/v1/completions", "POST", body, timeout=120)
        assert reply.status == 200, reply.body
        assert reply.json()["usage"]["completion_tokens"] == 48
    after = counts()
    delta = {k: after[k] - before.get(k, 0.0) for k in ("accepted", "draft_tokens", "drafts")}
    assert delta["drafts"] > 0 and delta["draft_tokens"] <= 3 * delta["drafts"]
    measured = speculative(delta["accepted"], delta["draft_tokens"], delta["drafts"])
    assert measured is not None
    assert 0 < measured.acceptance_rate <= 1
    assert 1 < measured.mean_acceptance_length <= 1 + 3
    per_position = [v for k, v in samples(text(f"{base}/metrics")).items() if "_per_pos_total" in k]
    assert len(per_position) == 3 and sum(per_position) == after["accepted"]


def seat(port: int) -> Seat:
    """The seat fleet has for that engine (what bench reads the counters for)."""
    return Seat(
        name="tiny",
        host="devbox",
        gpus=(),
        image=f"{real.IMAGE}:{real.TAG}",
        model=str(real.model_dir()),
        served_name=real.SERVED_NAME,
        context=CONTEXT,
        kv_cache_bytes=real.KV_CACHE_BYTES,
        speculative=Speculative(method="ngram", num_tokens=3),
        port=port,
    )
