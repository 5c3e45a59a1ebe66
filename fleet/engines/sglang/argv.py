"""SGLang's command line as fleet reads it back: `python3 -m sglang.launch_server` and its flags.

The speculative flags (`--speculative-algorithm`, `--speculative-num-steps`, ...) read into
one `speculative_config` dict with the keys every engine's shape uses (`method`,
`num_speculative_tokens`, `model`). Flag names from SGLang 0.5.23's
`srt/arg_groups/fields/` (a field `x_y` is the flag `--x-y`). Called by
`fleet.engines.parse_engine_argv` through the SGLang engine module.
"""

from __future__ import annotations

from fleet.facts.argv import (
    EngineArgs,
    Reader,
    fraction,
    names,
    parse_human_int,
    positive_int,
    program_name,
    read_flags,
    text,
)

MODULE = "sglang.launch_server"
OWN_FLAGS = frozenset({"--model-path", "--tp-size", "--mem-fraction-static", "--context-length"})
_SPEC = "speculative_config"

FLAGS: dict[str, Reader] = {
    "--model-path": ("model", text),
    "--model": ("model", text),
    "--served-model-name": ("served_model_names", names),
    "--host": ("host", text),
    "--port": ("port", positive_int),
    "--context-length": ("max_model_len", parse_human_int),
    "--mem-fraction-static": ("gpu_memory_utilization", fraction),
    "--tp-size": ("tensor_parallel_size", positive_int),
    "--tensor-parallel-size": ("tensor_parallel_size", positive_int),
    "--kv-cache-dtype": ("kv_cache_dtype", text),
    "--quantization": ("quantization", text),
    "--speculative-algorithm": (f"{_SPEC}.method", text),
    "--speculative-num-steps": (f"{_SPEC}.num_speculative_tokens", positive_int),
    "--speculative-eagle-topk": (f"{_SPEC}.eagle_topk", positive_int),
    "--speculative-num-draft-tokens": (f"{_SPEC}.num_draft_tokens", positive_int),
    "--speculative-draft-model-path": (f"{_SPEC}.model", text),
    "--speculative-draft-model": (f"{_SPEC}.model", text),
}


def detect(tokens: list[str]) -> int | None:
    """3 for `python3 -m sglang.launch_server`, None when the argv is no SGLang server."""
    name = program_name(tokens[0]) if tokens else ""
    if name.startswith("python") and tokens[1:3] == ["-m", MODULE]:
        return 3
    return None


def parse_args(engine: str, program: list[str], rest: list[str]) -> EngineArgs:
    """SGLang's flags after its program; the speculative flags read into one dict."""
    values: dict[str, object] = {}
    extra = read_flags(rest, FLAGS, values)
    values.update(engine=engine, program=tuple(program), extra=tuple(extra))
    return EngineArgs.model_validate(values)
