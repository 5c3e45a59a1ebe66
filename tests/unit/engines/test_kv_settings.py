"""What each engine reads off its own argv and release for the KV layout plan predicts."""

from __future__ import annotations

import pytest

from fleet.engines import engine_for
from fleet.engines.kv import KvSettings


@pytest.mark.parametrize(
    ("engine", "argv", "version", "expected"),
    [
        ("vllm", (), None, KvSettings()),
        (
            "vllm",
            ("--kv-cache-dtype", "FP8", "-pp", "2", "--max-num-batched-tokens=4096"),
            (0, 18, 0),
            KvSettings(dtype="fp8", pipeline_parallel=2, batched_tokens=4096),
        ),
        (
            "vllm",
            ("--mamba-ssm-cache-dtype", "bfloat16", "--max-num-batched-tokens", "lots"),
            (0, 11, 2),
            KvSettings(state_dtype="bfloat16", fewest_groups=True),
        ),
        (
            "sglang",
            ("--kv-cache-dtype", "fp8_e5m2", "--pp-size", "2"),
            None,
            KvSettings(dtype="fp8_e5m2", pipeline_parallel=2),
        ),
        ("sglang", ("-pp", "2", "--max-num-batched-tokens", "4096"), None, KvSettings()),
        ("llama.cpp", ("--kv-cache-dtype", "fp8", "-pp", "2"), None, KvSettings()),
    ],
    ids=[
        "vllm-defaults",
        "vllm-dtype-pp-chunk",
        "vllm-old-release-state-dtype",
        "sglang-own-flags",
        "sglang-ignores-vllm-flags",
        "llamacpp-lays-out-nothing",
    ],
)
def test_an_engine_reads_its_own_kv_flags(
    engine: str, argv: tuple[str, ...], version: tuple[int, int, int] | None, expected: KvSettings
) -> None:
    assert engine_for(engine).kv_settings(argv, version) == expected
