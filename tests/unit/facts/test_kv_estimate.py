"""The KV-cache estimate: per attention kind and dtype, and against the tokens vLLM logged."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

import pytest

from fleet.engines import vllm
from fleet.engines.vllm.log import parse_vllm_log
from fleet.facts.kv_estimate import (
    GIB,
    estimate_kv_bytes_per_token,
    estimate_kv_tokens,
    kv_layout,
)
from fleet.facts.model_config import ModelFacts, parse_model_config
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


def test_report_script_prints_both_ratios(capsys: pytest.CaptureFixture[str]) -> None:
    script = load_report_script()
    assert script.main([str(CORPUS)]) == 0
    out = capsys.readouterr().out
    llama = out.split("v0.15.0rc2_v1_llama3-8b-w4a16-awq-compressed-tensors_offline-LLM.log")[1]
    assert "  tokens l/e   1.0" in llama and "  max l/e      1.0" in llama
    assert "the log states no KV GiB" in out


# The KV layout vLLM builds, per attention kind, on the corpus configs: (id, config, kv
# dtype, tp, pp, drafter layers, speculative tokens, block size, layers per group, groups,
# tokens of a 22 GiB budget).
GEMMA3 = "gemma-3-27b-it_sliding-window_nested-text_config.config.json"
QWEN35 = "qwen3.5-27b_hybrid-linear-attention_nested-text_config.config.json"
MLLAMA = "llama-3.2-90b-vision-instruct_mllama_nested-text_config.config.json"
LAYOUTS = [
    ("gqa", LLAMA, "auto", 1, 1, 0, 0, 16, 32, 1, 22 * GIB // (32 * 2 * 8 * 128 * 2)),
    ("gqa-fp8-halves", LLAMA, "fp8", 1, 1, 0, 0, 16, 32, 1, 22 * GIB // (32 * 2 * 8 * 128)),
    ("gqa-tp4-splits-heads", QWEN3, "auto", 4, 1, 0, 0, 16, 64, 1, 22 * GIB // (64 * 2 * 2 * 256)),
    ("gqa-tp16-replicates", QWEN3, "auto", 16, 1, 0, 0, 16, 64, 1, 22 * GIB // (64 * 2 * 1 * 256)),
    ("gqa-pp2-splits-layers", QWEN3, "auto", 1, 2, 0, 0, 16, 32, 1, 22 * GIB // (32 * 2 * 8 * 256)),
    # 61 MLA layers plus the MTP layer: one latent of 512 + 64 per token and layer.
    ("mla-with-mtp-tp8", DEEPSEEK, "auto", 8, 1, 1, 0, 16, 62, 1, 330_720),
    # 10 full + 52 sliding-window layers: groups of 10, 1 full + 6 sliding (padded) groups;
    # vLLM reports num_blocks // 7 groups * 16 tokens.
    ("sliding-window-groups", GEMMA3, "auto", 1, 1, 0, 0, 16, 10, 7, 41_184),
    # 16 full + 48 Gated-DeltaNet layers: an attention block of 784 tokens holds one
    # layer's state (3,207,168 B, its recurrent part in float32); groups of 16, 1 full + 3
    # state groups. vLLM 0.19.1 logs "Setting attention block size to 784 tokens" and
    # "Padding mamba page size by 0.13%" for Qwen3.5-27B.
    ("hybrid-linear", QWEN35, "auto", 1, 1, 0, 0, 784, 16, 4, 89_376),
    # Its MTP layer joins the full layers (17), and 3 speculative tokens widen the state.
    ("hybrid-linear-mtp-k3", QWEN35, "auto", 1, 1, 1, 3, 800, 17, 4, 84_800),
    # 100 layers, 20 cross-attention: the 80 self-attention layers of the text model.
    ("multimodal-cross-attention", MLLAMA, "auto", 1, 1, 0, 0, 16, 80, 1, 22 * GIB // 327_680),
]


@pytest.mark.parametrize(
    ("config", "dtype", "tp", "pp", "extra", "k", "block", "per_group", "groups", "tokens"),
    [case[1:] for case in LAYOUTS],
    ids=[case[0] for case in LAYOUTS],
)
def test_kv_layout_per_attention_kind(
    config: str,
    dtype: str,
    tp: int,
    pp: int,
    extra: int,
    k: int,
    block: int,
    per_group: int,
    groups: int,
    tokens: int,
) -> None:
    layout = kv_layout(facts(config), dtype, tp, pp, extra, k)
    assert layout is not None
    assert (layout.block_size, layout.layers_per_group, len(layout.groups)) == (
        block,
        per_group,
        groups,
    )
    expected = tokens // block * block if groups == 1 else tokens  # whole blocks
    assert layout.tokens(22 * GIB) == expected
    assert layout.tokens(layout.budget_for(expected)) >= expected
    assert (
        layout.tokens(layout.largest_budget(expected))
        <= expected
        < layout.tokens(layout.largest_budget(expected) + layout.block_bytes * len(layout.groups))
    )


def test_layout_unknown_where_facts_are_thin() -> None:
    assert kv_layout(facts(LLAMA), "nvfp4") is None
    assert kv_layout(ModelFacts()) is None
    no_state = facts(QWEN35).model_copy(
        update={"attention": facts(QWEN35).attention.model_copy(update={"state": None})}
    )
    assert kv_layout(no_state) is None


def test_one_request_of_the_context_is_what_vllm_checks() -> None:
    """Full attention needs the whole context in blocks; a hybrid model far less."""
    llama = kv_layout(facts(LLAMA))
    assert llama is not None and llama.request_bytes(8192) == 512 * 16 * 32 * 4096
    qwen = kv_layout(facts(QWEN35))
    assert qwen is not None
    # 262,144 tokens: 335 full-attention blocks plus one state block per state group.
    assert qwen.request_bytes(262144) == (335 + 3) * 16 * 784 * 4096
    # vLLM's own Maximum concurrency at 22 GiB: 459 blocks over 338.
    assert round(qwen.max_concurrency(22 * GIB, 262144), 2) == 1.36
    assert qwen.tokens(22 * GIB) / 262144 < 0.35  # tokens / context is not that figure


def test_layout_tokens_against_a_logged_budget() -> None:
    """Llama-3-8B at 64.73 GiB: the block-rounded estimate equals the log to 0.01 GiB."""
    report = parse_vllm_log((CORPUS / "vllm-logs" / PAIRS[0][1]).read_text())
    layout = kv_layout(facts(LLAMA))
    assert layout is not None and report.kv_cache_gib is not None
    assert report.kv_cache_tokens is not None
    assert abs(layout.tokens(int(report.kv_cache_gib * GIB)) - report.kv_cache_tokens) <= 32


@pytest.mark.parametrize(
    ("argv", "dtype", "pp"),
    [
        ((), "auto", 1),
        (("--kv-cache-dtype", "fp8", "-pp", "2"), "fp8", 2),
        (("--kv-cache-dtype=FP8_E4M3", "--pipeline-parallel-size=4"), "fp8_e4m3", 4),
        (("--pipeline-parallel-size", "x"), "auto", 1),
    ],
    ids=["defaults", "separate-values", "equals-values", "not-a-number"],
)
def test_flags_that_change_the_layout(argv: tuple[str, ...], dtype: str, pp: int) -> None:
    settings = vllm.kv_settings(argv, None)
    assert (settings.dtype, settings.pipeline_parallel) == (dtype, pp)


def test_report_script_names_the_kinds_outside_five_percent(
    capsys: pytest.CaptureFixture[str],
) -> None:
    script = load_report_script()
    assert script.main([str(CORPUS)]) == 0
    out = capsys.readouterr().out
    qwen35 = out.split("v0.19.0_v1_qwen3.5-9b_hybrid-gdn-vlm-text_config_offline-LLM_l40s.log")[1]
    assert "  estimate     165792" in qwen35 and "  est. max     2.51" in qwen35
    assert "  outside 5%: none" in out
    for kind in ("full", "hybrid-linear", "tensor-parallel", "drafter"):
        assert f"  {kind:<18} " in out
    assert "v0.29.0_v1-mrv2_gemma4-26b-a4b-fp8-dynamic_kv-cache-dtype-fp8_l40s.log" in out


def test_report_script_says_a_kind_outside_five_percent(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A row 6% off on concurrency puts its kinds outside the target."""
    script = load_report_script()
    row = {"kinds": ("hybrid-linear", "drafter"), "tokens l/e": 1.0, "max l/e": 1.06}
    lines = script.summary([row])
    assert "  outside 5%: drafter, hybrid-linear" in lines
