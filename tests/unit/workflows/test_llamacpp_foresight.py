"""Plan sizes a llama.cpp seat from its GGUF header, as it sizes a vLLM seat from its
config.json: its weights, KV cache and compute buffer on its GPU, or in its host's RAM for a
CPU seat, printed beside its action; and `auto` surges a changed llama.cpp GPU seat where
both copies fit, recreating it where they do not. On the llama.cpp example fleet (systemd
hosts), its GGUF headers as the lab writes them (real keys and tensor infos)."""

from __future__ import annotations

import pytest

from tests.fakes import containers
from tests.unit.cli.fake_fleet import FakeFleet
from tests.unit.workflows.test_systemd_seats import apply, fleet

__all__ = ["fleet"]


def plan_lines(fake: FakeFleet, seat: str) -> list[str]:
    """The plan's lines from one seat's action to the next action."""
    lines = [line.strip() for line in fake.fleet("plan").stdout.splitlines()]
    start = next(
        i for i, line in enumerate(lines) if line.endswith(f"seat {seat} on {HOSTS[seat]}")
    )
    end = next(
        (
            i
            for i in range(start + 1, len(lines))
            if " on " in lines[i][:40] and lines[i][:1] in "+~-"
        ),
        len(lines),
    )
    return lines[start:end]


HOSTS = {"coder": "rtx3090", "mid": "rtx5070", "big": "apu"}


@pytest.mark.parametrize(
    ("seat", "memory"),
    [
        (
            "coder",
            # compute: the SWA cache's mask beside the full one (the real b11434's gemma3)
            "= GPU 0: weights 14.3GiB + KV 1.8GiB + compute 184.0MiB = 16.4GiB "
            "(+ CUDA context ~300MiB), estimate from the GGUF header",
        ),
        (
            "mid",
            "= GPU 0: weights 6.0GiB + KV 992.0MiB + compute 137.0MiB = 7.1GiB "
            "(+ CUDA context ~300MiB), estimate from the GGUF header",
        ),
        (
            "big",
            # compute: the FFN of the experts a token is routed to (the real b11434's qwen35moe)
            "= RAM of apu (60,546 MiB available): weights 34.4GiB + KV 222.8MiB + compute "
            "52.0MiB + output 0.9MiB = 34.6GiB, estimate from the GGUF header",
        ),
    ],
    ids=["gpu-gemma3-27b-two-slots", "gpu-gemma3-12b", "cpu-qwen35moe"],
)
def test_plan_prints_each_llamacpp_seats_buffers(fleet: FakeFleet, seat: str, memory: str) -> None:
    assert memory in plan_lines(fleet, seat)


@pytest.mark.parametrize(
    ("gpu_mib", "seat", "line"),
    [
        (
            containers.GPU_MIB,
            "coder",
            "~ seat coder: surge (GPU 0 has 75.6 GiB free beside the running copy; the new one "
            "needs 16.3 GiB)",
        ),
        (
            24576,
            "coder",
            "~ seat coder: recreate (GPU 0 has 4.0 GiB free; a second copy needs 16.3 GiB); "
            "code, coder unavailable while it loads",
        ),
        (
            containers.GPU_MIB,
            "big",
            "~ seat big: recreate (a CPU seat: auto surges only on GPUs); big unavailable "
            "while it loads",
        ),
    ],
    ids=["gpu-room-surges", "gpu-without-room-recreates", "cpu-recreates"],
)
def test_auto_surges_a_llamacpp_gpu_seat_where_both_copies_fit(
    fleet: FakeFleet, monkeypatch: pytest.MonkeyPatch, gpu_mib: int, seat: str, line: str
) -> None:
    apply(fleet)
    monkeypatch.setattr(containers, "GPU_MIB", gpu_mib)
    fleet.edit(f"seats/{seat}.yaml", "context: ", "context: 2048\n# was: ")
    assert any(said.startswith(line) for said in plan_lines(fleet, seat)), "(last start ...)"
