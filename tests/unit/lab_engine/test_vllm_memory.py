"""The vLLM stand-in's KV-cache arithmetic against what vLLM logged and asserts.

The stand-in lays its cache out with rules of its own (tests/lab/engine/memory.py), not
fleet's model, so the lab's logs are a check on plan's predictions rather than a copy.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import CORPUS
from tests.lab.engine.memory import GiB, plan_memory
from tests.lab.engine.modelinfo import load_shape
from tests.unit.lab_engine.standin import Image, StandIn, start_vllm

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
    pct = 100 * (plan.page_bytes - plan.state_bytes) / plan.state_bytes
    assert f"{pct:.2f}" == logged(r"Padding mamba page size by ([\d.]+)%")
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


def test_the_stand_ins_log_of_a_hybrid_model_is_what_plan_predicts(
    image: Image, tmp_path: Path, running: list[StandIn]
) -> None:
    """Qwen3.5-9B with MTP k=3 at a pinned 18 GiB: the lines the stand-in prints (its own
    arithmetic) are what fleet's model predicts for the same configuration."""
    from fleet.engines.vllm.log import parse_vllm_log
    from fleet.facts.kv_estimate import GIB, kv_layout
    from fleet.facts.model_config import parse_model_config

    model = model_dir(tmp_path, QWEN35_9B)
    spec = {"method": "qwen3_5_mtp", "num_speculative_tokens": 3}
    args = [str(model), "--kv-cache-memory-bytes", str(18 * GIB), "--max-model-len", "65536"]
    engine = start_vllm(image, [*args, "--speculative-config", json.dumps(spec)], {})
    running.append(engine)
    text = engine.wait_healthy().log()
    report = parse_vllm_log(text)
    layout = kv_layout(parse_model_config((CONFIGS / QWEN35_9B).read_text()), "auto", 1, 1, 1, 3)
    assert layout is not None
    assert f"Setting attention block size to {layout.block_size} tokens" in text
    assert report.kv_cache_tokens == layout.tokens(18 * GIB)
    assert report.max_concurrency == round(layout.max_concurrency(18 * GIB, 65536), 2)
