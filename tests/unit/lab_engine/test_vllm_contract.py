"""The vLLM stand-in keeps the contract the real vLLM keeps (tests/lab/real/contract_vllm.py):
what fleet reads off its start-up log equals what its API reports, so it cannot drift
from the real engine unseen. tests/integration/real_vllm_checks.py holds the real one to it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.lab.real.contract_vllm import api_facts, mismatches
from tests.unit.lab_engine.standin import Image, StandIn, get, start_vllm

NGRAM = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}
SPEC = ("--speculative-config", json.dumps(NGRAM))
CASES = [
    # (id, image version, extra args)
    ("v0.18.0-profiled", "0.18.0", ["--max-model-len", "8192"]),
    (
        "v0.18.0-kv-bytes-ngram",
        "0.18.0",
        ["--max-model-len", "8192", "--kv-cache-memory-bytes", "2147483648", *SPEC],
    ),
    (
        "v0.11.2-two-names",
        "0.11.2",
        ["--max-model-len", "4096", "--served-model-name", "alpha", "beta"],
    ),
]


def serve(
    image: Image, model: Path, running: list[StandIn], version: str, args: list[str]
) -> StandIn:
    """A stand-in of that image version, healthy."""
    names = [] if "--served-model-name" in args else ["--served-model-name", "alpha"]
    env = {"FLEET_LAB_VLLM_VERSION": version}
    standin = start_vllm(image, [str(model), *names, *args], env)
    running.append(standin)
    return standin.wait_healthy()


def replies(engine: StandIn) -> tuple[dict[str, object], dict[str, object], str]:
    """/version, /v1/models and /metrics as a client reads them."""
    version, models, metrics = (
        get(engine.url(p))[1] for p in ("/version", "/v1/models", "/metrics")
    )
    return version, models, metrics


@pytest.mark.parametrize(("version", "args"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_log_facts_equal_what_the_api_reports(
    image: Image, vllm_model: Path, running: list[StandIn], version: str, args: list[str]
) -> None:
    engine = serve(image, vllm_model, running, version, args)
    assert mismatches(engine.log(), *replies(engine)) == []


def test_a_stand_in_that_drifted_is_caught(
    image: Image, vllm_model: Path, running: list[StandIn]
) -> None:
    engine = serve(image, vllm_model, running, "0.18.0", ["--max-model-len", "8192"])
    version, models, metrics = replies(engine)
    facts = api_facts(version, models, metrics)
    assert facts.kv_cache_tokens and facts.kv_cache_tokens > 0
    drifted = metrics.replace(
        f'kv_cache_size_tokens="{facts.kv_cache_tokens}"',
        f'kv_cache_size_tokens="{facts.kv_cache_tokens // 2}"',
    )
    assert mismatches(engine.log(), version, models, drifted) == [
        f"kv_cache_tokens: log {facts.kv_cache_tokens}, api {facts.kv_cache_tokens // 2}"
    ]
