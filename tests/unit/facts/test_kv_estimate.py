"""The KV-cache estimate: per attention kind and dtype, and against the tokens vLLM logged."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

import pytest

from fleet.facts.kv_estimate import estimate_kv_bytes_per_token, estimate_kv_tokens
from fleet.facts.model_config import ModelFacts, parse_model_config
from fleet.facts.vllm_log import parse_vllm_log
from tests.conftest import CORPUS, REPO

CONFIGS = CORPUS / "model-configs"


def facts(name: str) -> ModelFacts:
    return parse_model_config((CONFIGS / name).read_text())


LLAMA = "llama-3.1-8b-instruct_dense.config.json"
QWEN3 = "qwen3-32b_dense.config.json"
DEEPSEEK = "deepseek-v3_mla_moe_fp8-block.config.json"

# (id, config, kv dtype, tensor parallel size, bytes per token per GPU)
CASES = [
    ("gqa-bf16", LLAMA, "auto", 1, 32 * 2 * 8 * 128 * 2),
    ("gqa-fp8", LLAMA, "fp8", 1, 32 * 2 * 8 * 128 * 1),
    ("gqa-float32", LLAMA, "float32", 1, 32 * 2 * 8 * 128 * 4),
    ("gqa-tp4", QWEN3, "auto", 4, 64 * 2 * (8 // 4) * 128 * 2),
    ("gqa-tp16-replicates-heads", QWEN3, "auto", 16, 64 * 2 * 1 * 128 * 2),
    ("mla-latent", DEEPSEEK, "auto", 1, 61 * (512 + 64) * 2),
    ("mla-replicated-under-tp", DEEPSEEK, "auto", 8, 61 * (512 + 64) * 2),
    # Only the 10 full-attention layers grow with the context.
    (
        "sliding-window",
        "gemma-3-27b-it_sliding-window_nested-text_config.config.json",
        "auto",
        1,
        10 * 2 * 16 * 128 * 2,
    ),
    # Only the 16 full-attention layers; Gated-DeltaNet layers hold a fixed state.
    (
        "hybrid-linear",
        "qwen3.5-27b_hybrid-linear-attention_nested-text_config.config.json",
        "auto",
        1,
        16 * 2 * 4 * 256 * 2,
    ),
    # 100 layers, 20 of them cross-attention to image tokens.
    (
        "cross-attention-left-out",
        "llama-3.2-90b-vision-instruct_mllama_nested-text_config.config.json",
        "auto",
        1,
        80 * 2 * 8 * 128 * 2,
    ),
    ("unknown-dtype", LLAMA, "nvfp4", 1, None),
    (
        "not-a-config",
        "vllm-tests_draft-model-arch-groundtruth_eagle-eagle3-medusa-mtp.json",
        "auto",
        1,
        None,
    ),
]


@pytest.mark.parametrize(
    ("config", "kv_dtype", "tp", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_bytes_per_token(config: str, kv_dtype: str, tp: int, expected: int | None) -> None:
    assert estimate_kv_bytes_per_token(facts(config), kv_dtype, tp) == expected


def test_default_dtype_is_the_explain_figure() -> None:
    llama = facts(LLAMA)
    assert llama.to_explain_json()["kv_bytes_per_token"] == estimate_kv_bytes_per_token(llama)


# Logs whose model has a config of the same attention geometry in the corpus.
# (id, log, config, lowest and highest logged/estimated accepted)
PAIRS = [
    (
        # Llama-3-8B (the log) and Llama-3.1-8B (the config) share 32 layers x 8 KV heads x 128.
        "llama3-8b-w4a16",
        "v0.15.0rc2_v1_llama3-8b-w4a16-awq-compressed-tensors_offline-LLM.log",
        LLAMA,
        0.99,
        1.01,
    ),
]


@pytest.mark.parametrize(
    ("log", "config", "low", "high"), [case[1:] for case in PAIRS], ids=[case[0] for case in PAIRS]
)
def test_estimate_against_logged_tokens(log: str, config: str, low: float, high: float) -> None:
    report = parse_vllm_log((CORPUS / "vllm-logs" / log).read_text())
    assert report.kv_cache_gib is not None and report.kv_cache_tokens is not None
    estimated = estimate_kv_tokens(
        facts(config),
        report.kv_cache_gib,
        report.kv_cache_dtype or "auto",
        report.tensor_parallel_size or 1,
    )
    assert estimated is not None
    ratio = report.kv_cache_tokens / estimated
    print(f"{log}: logged {report.kv_cache_tokens}, estimated {estimated}, ratio {ratio:.4f}")
    assert low <= ratio <= high


def test_no_estimate_without_a_logged_budget() -> None:
    """The 0.8.3 TinyLlama log states KV tokens but no KV GiB: nothing to estimate from."""
    report = parse_vllm_log(
        (CORPUS / "vllm-logs" / "v0.8.3_v1_tinyllama_bitsandbytes_args-namespace.log").read_text()
    )
    assert report.kv_cache_gib is None
    assert estimate_kv_tokens(facts(LLAMA), 0.0) is None


def load_report_script() -> ModuleType:
    path = REPO / "bench" / "kv_estimate_report.py"
    spec = importlib.util.spec_from_file_location("kv_estimate_report", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_report_script_prints_the_ratio(capsys: pytest.CaptureFixture[str]) -> None:
    script = load_report_script()
    assert script.main([str(CORPUS)]) == 0
    out = capsys.readouterr().out
    assert "v0.15.0rc2_v1_llama3-8b-w4a16-awq-compressed-tensors_offline-LLM.log" in out
    assert "logged/est.  1.0000" in out
    assert "the log states no KV GiB" in out
