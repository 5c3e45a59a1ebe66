"""The llama-server stand-in is held to the contract the real llama-server is held to
(tests/lab/real/contract_llamacpp.py; the real one in tests/integration/
test_real_llamacpp.py): what fleet reads off its startup log equals what its /props,
/slots and /metrics answer, so the stand-in cannot drift from what fleet reads silently."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lab.real.contract_llamacpp import fetch, mismatches
from tests.unit.lab_engine.standin import Image, StandIn, start_llama

CASES = {
    "two-slots": ["-c", "8192", "-np", "2"],
    "one-slot-q8-cache": ["-c", "4096", "-np", "1", "-ctk", "q8_0", "-ctv", "q8_0"],
    "unified-cache": ["-c", "8192", "-np", "4", "--kv-unified"],
    "drafter": ["-c", "8192", "-np", "2", "--model-draft", "{draft}", "--draft-max", "6"],
}


@pytest.mark.parametrize("flags", list(CASES.values()), ids=list(CASES))
def test_the_standins_log_and_api_agree(
    image: Image, gguf_dir: Path, running: list[StandIn], flags: list[str]
) -> None:
    draft = str(gguf_dir / "qwen3-0.6b-q8_0.gguf")
    argv = [
        "-m",
        str(gguf_dir / "qwen3-0.6b-q4_k_m.gguf"),
        "-ngl",
        "999",
        "--metrics",
        *(flag.format(draft=draft) for flag in flags),
    ]
    engine = start_llama(image, argv, {})
    running.append(engine)
    engine.wait_healthy()
    # The stand-in's build (b6100) logs everything but the drafter's n_max.
    unstated = ("draft tokens (n_max)",)
    assert mismatches(engine.log(), fetch(engine.url("")), argv, unstated) == []
