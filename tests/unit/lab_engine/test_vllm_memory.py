"""The vLLM stand-in's KV-cache arithmetic against what vLLM logged and asserts.

The stand-in lays its cache out with rules of its own (tests/lab/engine/memory.py), not
fleet's model, so the lab's logs are a check on plan's predictions rather than a copy.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import CORPUS
from tests.lab.engine.memory import GiB, plan_memory
from tests.lab.engine.modelinfo import load_shape

CONFIGS = CORPUS / "model-configs"
QWEN35_9B = "qwen3.5-9b_hybrid-linear-attention_nested-text_config_vlm.config.json"
QWEN35_LOG = "v0.19.0_v1_qwen3.5-9b_hybrid-gdn-vlm-text_config_offline-LLM_l40s.log"


def model_dir(tmp_path: Path, config: str) -> Path:
    path = tmp_path / "model"
    path.mkdir()
    shutil.copy(CONFIGS / config, path / "config.json")
    return path


def logged(pattern: str) -> str:
    found = re.search(pattern, (CORPUS / "vllm-logs" / QWEN35_LOG).read_text())
    assert found is not None
    return found.group(1)


def test_a_hybrid_model_logs_what_vllm_logged(tmp_path: Path) -> None:
    """Qwen3.5-9B at vLLM 0.19.0's 20.27 GiB: its block size, tokens and concurrency."""
    shape = load_shape(model_dir(tmp_path, QWEN35_9B))
    budget = int(float(logged(r"Available KV cache memory: ([\d.]+) GiB")) * GiB)
    plan = plan_memory(shape, 0, 1, 48 * GiB, None, budget, "auto", 262_144)
    assert plan.block_size == int(logged(r"Setting attention block size to (\d+) tokens"))
    assert f"{plan.kv_tokens:,}" == logged(r"GPU KV cache size: ([\d,]+) tokens")
    most = float(logged(r"per request: ([\d.]+)x"))
    assert plan.max_concurrency == pytest.approx(most, abs=0.01)


# (id, config, speculative config, KV GiB, context, group size, groups, tokens)
LAYOUTS = [
    # 10 full + 52 sliding layers of 16 KV heads x 128: groups of 10, 7 groups
    (
        "gemma3-sliding",
        "gemma-3-27b-it_sliding-window_nested-text_config.config.json",
        None,
        24,
        131_072,
        10,
        24 * GiB // (16 * 2 * 16 * 128 * 2) // 10 // 7 * 16,
    ),
    # Qwen3.5-27B with its MTP layer, k=3: 17 full + 48 state layers; an 800-token block
    (
        "qwen35-27b-mtp",
        "qwen3.5-27b_hybrid-linear-attention_nested-text_config.config.json",
        {"method": "qwen3_5_mtp", "num_speculative_tokens": 3},
        22,
        262_144,
        17,
        22 * GiB // (800 * 4096) // 17 // 4 * 800,
    ),
]


@pytest.mark.parametrize(
    ("config", "spec", "gib", "context", "size", "tokens"),
    [case[1:] for case in LAYOUTS],
    ids=[case[0] for case in LAYOUTS],
)
def test_layers_are_grouped_and_share_one_pool(
    tmp_path: Path,
    config: str,
    spec: dict[str, object] | None,
    gib: int,
    context: int,
    size: int,
    tokens: int,
) -> None:
    shape = load_shape(model_dir(tmp_path, config))
    plan = plan_memory(shape, 0, 1, 96 * GiB, None, gib * GiB, "auto", context, spec)
    assert (plan.group_size, plan.kv_tokens) == (size, tokens)
    assert plan.max_concurrency > plan.kv_tokens / context  # not tokens / context
