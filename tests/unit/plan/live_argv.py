"""What the engine processes of the example fleet run with, written out by hand.

Each entry is the seat's `/proc/<pid>/cmdline` as the fact script reads it off a host
where the seat is in sync with desired/: for vLLM the console script as the kernel starts
it (`/usr/bin/python3 /usr/local/bin/vllm serve ...`, the vllm/vllm-openai image's
ENTRYPOINT `vllm serve`), for SGLang `python3 -m sglang.launch_server` as the lmsysorg/sglang
images start it, for llama.cpp the server binary of the ggml-org images. Sizes are
the bytes the flags carry (22 GiB = 23622320128), speculative configs the JSON vLLM takes.

These lists are data, not derived from fleet's renderer: the in-sync fake fleet
(`tests.unit.plan.fakes`) observes them, so plan and the health gate are checked against
what an engine runs with, and `tests/unit/engines/test_roundtrip.py` checks the renderer
against them. A seat's `extra_args` are not listed here: desired/ passes them to the
engine verbatim, and the fake appends the seat's own.
"""

from __future__ import annotations

from fleet.engines.llamacpp import rendered_verbosity

VLLM = ("/usr/bin/python3", "/usr/local/bin/vllm", "serve")

LIVE_ARGV: dict[str, tuple[str, ...]] = {
    "char-rp": (
        *VLLM,
        "/models/gemma-3-27b-it",
        "--served-model-name",
        "char-rp",
        "--host",
        "0.0.0.0",
        "--port",
        "8016",
        "--max-model-len",
        "131072",
        "--tensor-parallel-size",
        "1",
        "--gpu-memory-utilization",
        "0.8",
    ),
    "coder": (
        *VLLM,
        "/models/TinyLlama-1.1B-Chat-FP8",
        "--served-model-name",
        "coder",
        "--host",
        "0.0.0.0",
        "--port",
        "8030",
        "--max-model-len",
        "2048",
        "--tensor-parallel-size",
        "1",
        "--gpu-memory-utilization",
        "0.02",
    ),
    "embed": (
        *VLLM,
        "/models/stories42M-embed",
        "--served-model-name",
        "embed",
        "--host",
        "0.0.0.0",
        "--port",
        "8018",
        "--max-model-len",
        "1024",
        "--tensor-parallel-size",
        "1",
        "--kv-cache-memory-bytes",
        "268435456",
    ),
    "flash": (
        *VLLM,
        "/models/Qwen3-30B-A3B-NVFP4",
        "--served-model-name",
        "flash",
        "--host",
        "0.0.0.0",
        "--port",
        "8026",
        "--max-model-len",
        "65536",
        "--tensor-parallel-size",
        "1",
        "--kv-cache-memory-bytes",
        "10737418240",
        "--speculative-config",
        '{"method":"mtp","num_speculative_tokens":3}',
    ),
    "llama8b": (
        *VLLM,
        "/models/Llama-3.1-8B-Instruct",
        "--served-model-name",
        "llama8b",
        "--host",
        "0.0.0.0",
        "--port",
        "8050",
        "--max-model-len",
        "32768",
        "--tensor-parallel-size",
        "1",
        "--gpu-memory-utilization",
        "0.9",
    ),
    "reason": (
        *VLLM,
        "/models/Qwen3-32B",
        "--served-model-name",
        "reason",
        "--host",
        "0.0.0.0",
        "--port",
        "8015",
        "--max-model-len",
        "40960",
        "--tensor-parallel-size",
        "2",
        "--kv-cache-memory-bytes",
        "11811160064",
    ),
    "rerank": (
        *VLLM,
        "/models/stories42M-rerank",
        "--served-model-name",
        "rerank",
        "--host",
        "0.0.0.0",
        "--port",
        "8019",
        "--max-model-len",
        "1024",
        "--tensor-parallel-size",
        "1",
        "--kv-cache-memory-bytes",
        "268435456",
    ),
    "sec": (
        *VLLM,
        "/models/Qwen3.5-27B",
        "--served-model-name",
        "sec",
        "--host",
        "0.0.0.0",
        "--port",
        "8025",
        "--max-model-len",
        "262144",
        "--tensor-parallel-size",
        "1",
        "--kv-cache-memory-bytes",
        "23622320128",
        "--speculative-config",
        '{"method":"qwen3_5_mtp","num_speculative_tokens":3}',
    ),
    "llama8b-sgl": (
        "python3",
        "-m",
        "sglang.launch_server",
        "--model-path",
        "/models/Llama-3.1-8B-Instruct",
        "--served-model-name",
        "llama8b-sgl",
        "--host",
        "0.0.0.0",
        "--port",
        "8062",
        "--context-length",
        "16384",
        "--tp-size",
        "1",
        "--mem-fraction-static",
        "0.8",
        "--enable-metrics",
    ),
    # tests/unit/engines/test_llamacpp.py's GGUF coder: 2 slots of 8,192 tokens
    "gguf-coder": (
        "/app/llama-server",
        "--model",
        "/models/coder-27b.gguf",
        "--alias",
        "gguf-coder",
        "--host",
        "0.0.0.0",
        "--port",
        "8060",
        "--ctx-size",
        "16384",
        "--parallel",
        "2",
        "--n-gpu-layers",
        "999",
        "--metrics",
    ),
}


def live_argv(seat: str, extra_args: tuple[str, ...] = (), **edits: str) -> list[str]:
    """A seat's live argv, its `extra_args` appended, with `flag_name=value` edits
    (`max_model_len="131072"` sets the value after `--max-model-len`); a llama-server's
    ends with the verbosity fleet renders after them (`-lv 4`)."""
    argv = [*LIVE_ARGV[seat], *extra_args]
    if argv[0].endswith("llama-server"):
        argv += rendered_verbosity(extra_args)
    for name, value in edits.items():
        flag = "--" + name.replace("_", "-")
        argv[argv.index(flag) + 1] = value
    return argv
