"""A seat that was stopped is not out of memory: `fleet bench` reads a vLLM log up to the
line where the engine says it was told to stop (SIGTERM), so the `EngineDeadError` of a
request the stop cut is the stop's; an engine that died by itself still reads as dead.
On vLLM 0.32's own logs (tests/corpus/vllm-stops, recorded from the real build)."""

from __future__ import annotations

import pytest

from fleet.engines import engine_for
from fleet.observed.bench import oom_line, stop_line, stop_signatures
from tests.conftest import CORPUS

LOGS = CORPUS / "vllm-stops"
IDLE = (LOGS / "v0.32.0_v1_tiny-llama_cpu-backend_sigterm-idle.log").read_text().splitlines()
DIED = (
    (LOGS / "v0.32.0_v1_tiny-llama_cpu-backend_worker-died-then-sigterm.log")
    .read_text()
    .splitlines()
)
DEAD = [line for line in DIED if "EngineDeadError" in line]
STOPPED = "[shutdown] API server: shutdown triggered"
# The case: a stop, then the EngineDeadError of the request it cut (the recorded
# dead-engine lines placed after the recorded stop's first line).
CUT = [*IDLE[: next(i for i, ln in enumerate(IDLE) if STOPPED in ln) + 1], *DEAD, *IDLE[-5:]]


@pytest.mark.parametrize(
    ("lines", "oom", "stop"),
    [
        (IDLE, None, STOPPED),
        (CUT, None, STOPPED),
        (DIED, "EngineDeadError", STOPPED),
        ([ln for ln in DIED if STOPPED not in ln and "SIGTERM" not in ln], "EngineDeadError", None),
    ],
    ids=["stopped-idle", "stopped-with-a-request-cut", "died-then-stopped", "died"],
)
def test_the_bench_reads_the_stop_before_the_dead_engine(
    lines: list[str], oom: str | None, stop: str | None
) -> None:
    vllm = engine_for("vllm")
    found = oom_line(lines, vllm.OOM_SIGNATURES, stop_signatures("vllm"))
    assert (found is None) == (oom is None) and (oom is None or oom in (found or ""))
    stopped = stop_line(lines, stop_signatures("vllm"))
    assert (stopped is None) == (stop is None) and (stop is None or stop in (stopped or ""))


def test_a_real_out_of_memory_before_a_stop_is_still_one() -> None:
    oom = "ERROR torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB"
    stop = next(i for i, ln in enumerate(IDLE) if STOPPED in ln)
    lines = [*IDLE[:stop], oom, *IDLE[stop:]]
    assert oom_line(lines, engine_for("vllm").OOM_SIGNATURES, stop_signatures("vllm")) == oom
