"""vLLM's command line as fleet reads it back: the programs that start it, and its flags.

`vllm serve MODEL ...`, `python -m vllm.entrypoints.openai.api_server --model MODEL ...`
(and `vllm.entrypoints.cli.main serve`); `--speculative-config` JSON and its dotted form
`--speculative-config.method mtp`; sizes as vLLM's `human_readable_int`. Called by
`fleet.engines.parse_engine_argv` through the vLLM engine module.
"""

from __future__ import annotations

from fleet.facts.argv import (
    EngineArgs,
    Reader,
    fraction,
    json_object,
    names,
    parse_human_int,
    positive_int,
    program_name,
    read_flags,
    text,
)

_MODULES = (["vllm.entrypoints.openai.api_server"], ["vllm.entrypoints.cli.main"])
_SHARED = frozenset({"--model", "--host", "--port"})
DOTTED = ("--speculative-config.", "speculative_config")


def _max_model_len(value: str) -> int | None:
    return -1 if value.strip().lower() in ("auto", "-1") else parse_human_int(value)


FLAGS: dict[str, Reader] = {
    "--model": ("model", text),
    "--served-model-name": ("served_model_names", names),
    "--host": ("host", text),
    "--port": ("port", positive_int),
    "--max-model-len": ("max_model_len", _max_model_len),
    "--gpu-memory-utilization": ("gpu_memory_utilization", fraction),
    "--kv-cache-memory-bytes": ("kv_cache_memory_bytes", parse_human_int),
    "--kv-cache-dtype": ("kv_cache_dtype", text),
    "--tensor-parallel-size": ("tensor_parallel_size", positive_int),
    "-tp": ("tensor_parallel_size", positive_int),
    "--quantization": ("quantization", text),
    "-q": ("quantization", text),
    "--speculative-config": ("speculative_config", json_object),
}
OWN_FLAGS = frozenset(flag for flag in FLAGS if flag.startswith("--")) - _SHARED


def detect(tokens: list[str]) -> int | None:
    """How many tokens the program takes (`vllm serve`, `python3 -m vllm...`), None: not vLLM."""
    name = program_name(tokens[0]) if tokens else ""
    if name == "vllm":
        return 2 if tokens[1:2] == ["serve"] else 1
    if name.startswith("python") and tokens[1:2] == ["-m"] and tokens[2:3] in _MODULES:
        return 4 if tokens[3:4] == ["serve"] else 3
    return None


def parse_args(engine: str, program: list[str], rest: list[str]) -> EngineArgs:
    """vLLM's flags after its program; `serve MODEL` takes the model as its first word."""
    values: dict[str, object] = {}
    if program[-1:] == ["serve"] and rest and not rest[0].startswith("-"):
        values["model"], rest = rest[0], rest[1:]
    extra = read_flags(rest, FLAGS, values, DOTTED)
    values.update(engine=engine, program=tuple(program), extra=tuple(extra))
    return EngineArgs.model_validate(values)
