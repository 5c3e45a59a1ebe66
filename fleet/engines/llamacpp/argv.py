"""llama-server's command line as fleet reads it back: the program and its flags.

`llama-server -m MODEL ...` (the server images install it as `/app/llama-server`; older
ones as `server`), with its short and long spellings. Called by
`fleet.engines.parse_engine_argv` through the llama.cpp engine module.
"""

from __future__ import annotations

from fleet.facts.argv import EngineArgs, Reader, names, positive_int, program_name, read_flags, text

FLAGS: dict[str, Reader] = {
    "-m": ("model", text),
    "--model": ("model", text),
    "-a": ("served_model_names", names),
    "--alias": ("served_model_names", names),
    "--host": ("host", text),
    "--port": ("port", positive_int),
    "-c": ("ctx_size", positive_int),
    "--ctx-size": ("ctx_size", positive_int),
    "-np": ("parallel_slots", positive_int),
    "--parallel": ("parallel_slots", positive_int),
    "-ngl": ("gpu_layers", positive_int),
    "--gpu-layers": ("gpu_layers", positive_int),
    "--n-gpu-layers": ("gpu_layers", positive_int),
    "-md": ("draft_model", text),
    "--model-draft": ("draft_model", text),
    "--draft-max": ("draft_max", positive_int),
    "--draft": ("draft_max", positive_int),
    "--draft-n": ("draft_max", positive_int),
    "-ctk": ("kv_cache_dtype", text),
    "--cache-type-k": ("kv_cache_dtype", text),
}
# Flags only llama-server takes: a bare command (no program) with one of them is llama.cpp.
OWN_FLAGS = frozenset({"-m", "-c", "--ctx-size", "-ngl", "--n-gpu-layers", "-np"})


def detect(tokens: list[str]) -> int | None:
    """1 when the argv starts llama-server, else None."""
    name = program_name(tokens[0]) if tokens else ""
    return 1 if name in ("llama-server", "server") or name.startswith("llama-server") else None


def parse_args(engine: str, program: list[str], rest: list[str]) -> EngineArgs:
    """llama-server's flags after its program."""
    values: dict[str, object] = {}
    extra = read_flags(rest, FLAGS, values)
    values.update(engine=engine, program=tuple(program), extra=tuple(extra))
    return EngineArgs.model_validate(values)
