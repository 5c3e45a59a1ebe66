"""A seat on the CPU (llama.cpp, vLLM's CPU build) is checked against the host's RAM (from
/proc/meminfo)."""

from __future__ import annotations

import pytest

from fleet.observed.models import ModelInfo, ObservedHost
from fleet.plan.host_memory import ram_blockers, ram_line
from fleet.spec.models import Seat

GIB = 1024**3
SEAT = Seat(
    name="apu-coder",
    host="apu",
    gpus=(),
    engine="llama.cpp",
    image="ghcr.io/ggml-org/llama.cpp:server-b6100",
    model="/models/q.gguf",
    served_name="q",
    context=8192,
    parallel=2,
    port=8080,
)
VLLM_SEAT = Seat(
    name="tiny",
    host="apu",
    gpus=(),
    engine="vllm",
    image="public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.32.0",
    model="/models/tiny-llama",
    served_name="tiny",
    context=2048,
    kv_cache_bytes=4 * GIB,
    port=8000,
)
TINY = ModelInfo(path="/models/tiny-llama", size_bytes=2 * 1024**2)
MODEL = ModelInfo(
    path="/models/q.gguf", size_bytes=20 * GIB, kv_bytes_per_token=2 * 64 * 8 * 128 * 2
)


@pytest.mark.parametrize(
    ("host", "seat", "message"),
    [
        (
            ObservedHost(
                name="apu",
                memory_total_mib=65536,
                memory_available_mib=60000,
                models={MODEL.path: MODEL},
            ),
            SEAT,
            None,
        ),
        (
            ObservedHost(
                name="apu",
                memory_total_mib=65536,
                memory_available_mib=60000,
                models={MODEL.path: MODEL},
            ),
            SEAT.model_copy(update={"context": 131072}),
            "needs ~86,528 MiB of RAM on apu (model, KV for 262,144 tokens, overhead), which has "
            "60,000 MiB available of 65,536 MiB: lower context or parallel",
        ),
        (
            ObservedHost(name="apu", memory_available_mib=60000),
            SEAT,
            "cannot size /models/q.gguf on apu: its GGUF header was not read",
        ),
        (
            ObservedHost(name="apu", models={MODEL.path: MODEL}),
            SEAT,
            "cannot read /proc/meminfo on apu",
        ),
        (
            ObservedHost(
                name="apu",
                memory_total_mib=16000,
                memory_available_mib=8000,
                models={TINY.path: TINY},
            ),
            VLLM_SEAT,
            None,
        ),
        (
            ObservedHost(
                name="apu",
                memory_total_mib=16000,
                memory_available_mib=8000,
                models={TINY.path: TINY},
            ),
            VLLM_SEAT.model_copy(update={"kv_cache_bytes": 6 * GIB}),
            # 2 MiB of weights + 6 GiB of KV + the CPU build's 2,816 MiB
            "needs ~8,962 MiB of RAM on apu (model, KV 6,144 MiB, overhead), which has 8,000 "
            "MiB available of 16,000 MiB: lower kv_cache_bytes, or place it",
        ),
        (
            ObservedHost(name="apu", memory_available_mib=8000),
            VLLM_SEAT,
            "cannot size /models/tiny-llama on apu: its size is unknown",
        ),
    ],
    ids=[
        "fits",
        "context-too-big",
        "no-header",
        "no-meminfo",
        "vllm-fits",
        "vllm-kv-too-big",
        "vllm-not-sized",
    ],
)
def test_ram(host: ObservedHost, seat: Seat, message: str | None) -> None:
    found = [b.message for b in ram_blockers(host, seat)]
    assert (found == []) if message is None else (len(found) == 1 and found[0].startswith(message))


APU = ObservedHost(
    name="apu", memory_total_mib=65536, memory_available_mib=60000, models={TINY.path: TINY}
)


@pytest.mark.parametrize(
    ("host", "seat", "line"),
    [
        (
            APU,
            VLLM_SEAT,
            "RAM of apu (60,000 MiB available): model 2 MiB + KV 4,096 MiB + engine ~2,816 "
            "MiB = ~6,914 MiB, estimate from the model's size",
        ),
        (
            APU.model_copy(update={"memory_available_mib": None}),
            VLLM_SEAT,
            "RAM of apu: model 2 MiB + KV 4,096 MiB + engine ~2,816 MiB = ~6,914 MiB, "
            "estimate from the model's size",
        ),
        (APU, VLLM_SEAT.model_copy(update={"gpus": (0,)}), None),
        (ObservedHost(name="apu", memory_available_mib=60000), VLLM_SEAT, None),
    ],
    ids=["vllm-cpu-seat", "meminfo-unread", "gpu-seat", "model-unread"],
)
def test_a_cpu_seat_says_the_ram_it_will_take(
    host: ObservedHost, seat: Seat, line: str | None
) -> None:
    # the same figures the RAM blocker counts (ram_need_mib), on the plan line
    assert ram_line(host, seat) == line
