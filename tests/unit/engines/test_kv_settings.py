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


V032 = (0, 32, 0)
CPU_NOTES = (
    ("all", "block 128 (CPU)"),
    ("sliding", "prefill chunk 2048"),
    ("state", "SSM state float32 (CPU)"),
    ("state", "Mamba cache align (prefix caching)"),
)


@pytest.mark.parametrize(
    ("argv", "version", "platform", "expected"),
    [
        (
            (),
            V032,
            "cpu",
            {
                "block_size": 128,
                "kernel_block": 32,
                "batched_tokens": 2048,
                "in_flight_batches": 1,
                "state_dtype": "float32",
                "state_cache": "align",
                "tokens_from_concurrency": True,
                "assumptions": CPU_NOTES,
            },
        ),
        (
            ("--block-size", "64", "--max-num-batched-tokens", "4096", "-tp", "2"),
            None,
            "cpu",
            {"block_size": 64, "batched_tokens": 4096, "assumptions": CPU_NOTES[2:]},
        ),
        (
            ("--tensor-parallel-size", "2", "--no-enable-prefix-caching"),
            V032,
            "cpu",
            {"batched_tokens": 4096, "state_cache": "none", "prefix_caching": False},
        ),
        (
            ("--mamba-ssm-cache-dtype", "bfloat16", "--mamba-cache-mode", "none"),
            V032,
            "cpu",
            {"state_dtype": "bfloat16", "state_cache": "none"},
        ),
        (
            (),
            V032,
            "cuda",
            {
                "block_size": None,
                "in_flight_batches": 2,
                "state_cache": "align",
                "assumptions": (
                    ("sliding", "2 prefill chunks in flight (async scheduling)"),
                    ("state", "Mamba cache align (prefix caching)"),
                ),
            },
        ),
        (("--no-async-scheduling",), V032, "rocm", {"in_flight_batches": 1}),
        (("-pp", "2"), V032, "cuda", {"in_flight_batches": 1}),
        ((), (0, 25, 1), "cuda", {"in_flight_batches": 1, "tokens_from_concurrency": True}),
        ((), (0, 19, 0), "cuda", {"tokens_from_concurrency": False, "state_cache": None}),
    ],
    ids=[
        "cpu-0.32-defaults",
        "cpu-flags-win",
        "cpu-tp2-chunk-and-prefix-caching-off",
        "cpu-state-flags-win",
        "cuda-0.32-async-and-align",
        "rocm-async-off",
        "cuda-pipeline-parallel-no-async",
        "cuda-0.25-size-from-concurrency-only",
        "cuda-0.19-as-the-corpus-holds",
    ],
)
def test_vllm_takes_its_defaults_from_release_and_platform(
    argv: tuple[str, ...],
    version: tuple[int, int, int] | None,
    platform: str,
    expected: dict[str, object],
) -> None:
    settings = engine_for("vllm").kv_settings(argv, version, platform)
    assert {key: getattr(settings, key) for key in expected} == expected
