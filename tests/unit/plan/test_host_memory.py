"""A llama.cpp seat on the CPU is checked against the host's RAM (from /proc/meminfo)."""

from __future__ import annotations

import pytest

from fleet.observed.models import ModelInfo, ObservedHost
from fleet.plan.host_memory import ram_blockers
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
            "60,000 MiB available of 65,536 MiB",
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
    ],
    ids=["fits", "context-too-big", "no-header", "no-meminfo"],
)
def test_ram(host: ObservedHost, seat: Seat, message: str | None) -> None:
    found = [b.message for b in ram_blockers(host, seat)]
    assert (found == []) if message is None else (len(found) == 1 and found[0].startswith(message))
