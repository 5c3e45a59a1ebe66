"""The defaults vLLM 0.32 takes from the device a seat runs on, as plan predicts them: the
prefill chunk by the seat's first GPU, and the block an MLA model gets on a CPU with and
without AMX. Each row cites where vLLM decides it."""

from __future__ import annotations

import pytest

from fleet.facts.model_config import ModelFacts, parse_model_config
from fleet.plan.seat_layout import seat_layout
from fleet.spec.models import Seat
from tests.conftest import CORPUS

GEMMA3 = parse_model_config(
    (
        CORPUS / "model-configs" / "gemma-3-27b-it_sliding-window_nested-text_config.config.json"
    ).read_text()
)
DEEPSEEK_V2 = parse_model_config((CORPUS / "vllm-cpu-kv" / "deepseek_v2.config.json").read_text())
QWEN3 = parse_model_config((CORPUS / "vllm-cpu-kv" / "qwen3.config.json").read_text())
GPU_IMAGE = "vllm/vllm-openai:v0.32.0"
CPU_IMAGE = "public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.32.0"
ASYNC = "2 prefill chunks in flight (async scheduling)"


def seat(image: str, gpus: list[int], flags: list[str]) -> Seat:
    return Seat.model_validate(
        {"name": "s", "host": "h", "gpus": gpus, "model": "/m", "served_name": "s"}
        | {"context": 32768, "port": 8000, "image": image, "extra_args": flags}
    )


# vllm/engine/arg_utils.py (0.32) `EngineArgs.get_batch_defaults`, UsageContext
# OPENAI_API_SERVER (`vllm serve`): the first visible GPU's NVML memory and name decide;
# >= 160 GiB 16384, >= 70 GiB 8192 unless the name holds "a100" (PR #17885), else 2048;
# `_set_default_max_num_seqs_and_batched_tokens_args` doubles it for
# `--performance-mode throughput`; an explicit `--max-num-batched-tokens` wins.
CHUNKS = {
    "a100-80gb": ("NVIDIA A100-SXM4-80GB", 81920, [], 2048),
    "a100-40gb": ("NVIDIA A100-PCIE-40GB", 40960, [], 2048),
    "h100-80gb": ("NVIDIA H100 80GB HBM3", 81559, [], 8192),
    "rtx-pro-6000": ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 97887, [], 8192),
    "b200": ("NVIDIA B200", 183359, [], 16384),
    "rtx-3090": ("NVIDIA GeForce RTX 3090", 24576, [], 2048),
    "name-not-known-80gib": (None, 81920, [], 8192),
    # neither nvidia-smi nor the host file says the GPU's memory: 8192, said as assumed
    "memory-not-known": (None, 0, [], 8192),
    "h100-throughput-mode": (
        "NVIDIA H100 80GB HBM3",
        81559,
        ["--performance-mode", "throughput"],
        16384,
    ),
    "a100-explicit-chunk": (
        "NVIDIA A100-SXM4-80GB",
        81920,
        ["--max-num-batched-tokens", "4096"],
        4096,
    ),
}


@pytest.mark.parametrize(("name", "mib", "flags", "chunk"), list(CHUNKS.values()), ids=list(CHUNKS))
def test_the_prefill_chunk_is_the_one_vllm_takes_on_the_seats_gpu(
    name: str | None, mib: int, flags: list[str], chunk: int
) -> None:
    layout = seat_layout(seat(GPU_IMAGE, [0], flags), GEMMA3, None, mib or None, name)
    assert layout is not None
    notes = [n for n in layout.assumptions if n.startswith("prefill chunk")]
    explicit = "--max-num-batched-tokens" in flags
    device = f"{name}, {mib / 1024:.0f} GiB" if name else f"{mib / 1024:.0f} GiB GPU"
    device = device if mib else "GPU memory not known"
    assert notes == ([] if explicit else [f"prefill chunk {chunk} ({device})"])
    # Gemma 3's sliding layers (window 1,024) hold the window and two chunks in flight,
    # at most the context (SlidingWindowSpec.max_admission_blocks_per_request)
    sliding = -(-min(1024 - 1 + 2 * chunk, 32768) // 16) + 1
    assert layout.request_blocks(32768) == 32768 // 16 + 6 * sliding


# vllm/platforms/cpu.py (0.32): an MLA model on a CPU without AMX (`get_attn_backend_cls`:
# `torch.cpu._is_amx_tile_supported()`), or with `--attention-backend CPU_MLA`, runs the
# reference CPU_MLA backend; `check_and_update_config` sets its block to 16 whatever
# `--block-size` says (csrc/cpu/mla_decode.cpp compiles for 16 only) and turns prefix
# caching and chunked prefill off. With AMX, AMX_MLA takes the CPU's usual 128.
MLA = {
    "mla-with-amx": (DEEPSEEK_V2, True, [], 128, "block 128 (CPU)"),
    "mla-without-amx": (DEEPSEEK_V2, False, [], 16, "block 16 (CPU MLA without AMX)"),
    "mla-amx-not-known": (DEEPSEEK_V2, None, [], 128, "AMX assumed for MLA (CPU flags not read)"),
    "mla-cpu-mla-chosen": (
        DEEPSEEK_V2,
        True,
        ["--attention-backend", "CPU_MLA"],
        16,
        "block 16 (CPU_MLA chosen)",
    ),
    "mla-without-amx-block-flag-overridden": (
        DEEPSEEK_V2,
        False,
        ["--block-size", "64"],
        16,
        "block 16 (CPU MLA without AMX)",
    ),
    "dense-without-amx": (QWEN3, False, [], 128, "block 128 (CPU)"),
}


@pytest.mark.parametrize(
    ("facts", "amx", "flags", "block", "note"), list(MLA.values()), ids=list(MLA)
)
def test_an_mla_model_on_a_cpu_gets_the_block_its_backend_takes(
    facts: ModelFacts, amx: bool | None, flags: list[str], block: int, note: str
) -> None:
    layout = seat_layout(seat(CPU_IMAGE, [], flags), facts, None, amx=amx)
    assert layout is not None
    assert layout.block_size == block
    assert note in layout.assumptions


# The real vLLM 0.32 CPU build on the tiny DeepSeek-V2 (tests/corpus/vllm-cpu-kv, recorded on
# a CPU with AMX): as it is (AMX_MLA, blocks of 128) and with `--attention-backend CPU_MLA`,
# the backend a CPU without AMX runs (blocks of 16). A seat on a host of each kind, without
# the flag, is predicted to the token.
RECORDED_MLA = {
    "host-with-amx": ("deepseek_v2", True),
    "host-without-amx": ("deepseek_v2_cpu-mla", False),
}


@pytest.mark.parametrize(("case", "amx"), list(RECORDED_MLA.values()), ids=list(RECORDED_MLA))
def test_a_cpu_mla_seat_is_predicted_as_the_real_backend_of_its_host_logged(
    case: str, amx: bool
) -> None:
    from fleet.engines.vllm.log import parse_vllm_log

    report = parse_vllm_log((CORPUS / "vllm-cpu-kv" / f"{case}.log").read_text())
    budget = 256 * 1024**2  # the recordings' --kv-cache-memory-bytes
    layout = seat_layout(seat(CPU_IMAGE, [], []), DEEPSEEK_V2, None, amx=amx)
    assert layout is not None
    assert layout.tokens(budget, 4096) == report.kv_cache_tokens
    assert round(layout.max_concurrency(budget, 4096), 2) == report.max_concurrency
