"""Engine arguments from a container's argv (entrypoint + command), vLLM or llama-server.

Called by the reconciler with `docker inspect`'s `Path` + `Args`, to check that a running
seat carries every flag its spec implies, and by the inventory to report what really
runs. Understands `vllm serve MODEL ...`, `python -m vllm.entrypoints.openai.api_server
--model MODEL ...` and `llama-server -m MODEL ...`; `--flag value` and `--flag=value` alike,
and vLLM's `--flag_name` spelling. Sizes follow vLLM's `human_readable_int`: `40k` is
decimal, `40K` binary (`10G` = 10 GiB); vLLM rejects `10GiB`, so it is not a size here.
Every argument not understood is kept verbatim, in order, in `extra`.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Sequence
from enum import StrEnum

from fleet.base import CoreModel
from fleet.facts._text import to_float, to_int

_HUMAN_INT = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
_VLLM_MODULES = (["vllm.entrypoints.openai.api_server"], ["vllm.entrypoints.cli.main"])
_LLAMA_ONLY_FLAGS = frozenset({"-m", "-c", "--ctx-size", "-ngl", "--n-gpu-layers", "-np"})
_SHARED_FLAGS = frozenset({"--model", "--host", "--port"})
_SHELLS = frozenset({"sh", "bash", "dash"})


class EngineName(StrEnum):
    """Which engine an argv starts."""

    VLLM = "vllm"
    LLAMA_SERVER = "llama-server"


class EngineArgs(CoreModel):
    """The engine flags fleet checks; an argument not given is None.

    `max_model_len` is vLLM's `--max-model-len` (-1 for `auto`); llama-server's whole
    context (`-c`) is `ctx_size`. `speculative_config` is the parsed `--speculative-config`
    JSON (vLLM) — None when absent or not valid JSON (then the flag stays in `extra`).
    """

    engine: EngineName | None = None
    program: tuple[str, ...] = ()
    model: str | None = None
    served_model_names: tuple[str, ...] = ()
    host: str | None = None
    port: int | None = None
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    kv_cache_memory_bytes: int | None = None
    kv_cache_dtype: str | None = None
    tensor_parallel_size: int | None = None
    quantization: str | None = None
    speculative_config: dict[str, object] | None = None
    ctx_size: int | None = None
    parallel_slots: int | None = None
    gpu_layers: int | None = None
    draft_model: str | None = None
    draft_max: int | None = None
    extra: tuple[str, ...] = ()


def parse_human_int(value: str) -> int | None:
    """vLLM's `human_readable_int`: `25.6k` -> 25600, `16K` -> 16384, `4096` -> 4096."""
    text = value.strip()
    if match := _HUMAN_INT.fullmatch(text):
        number, suffix = match.groups()
        if suffix in _DECIMAL:
            return int(float(number) * _DECIMAL[suffix])
        return int(number) * _BINARY[suffix] if "." not in number else None
    return to_int(text) if "," not in text else None


def parse_engine_argv(argv: Sequence[str]) -> EngineArgs:
    """Read the engine's flags off its argv; unknown arguments go to `extra` verbatim."""
    tokens = _unwrap_shell([str(token) for token in argv])
    engine, program, rest = _split_program(tokens)
    values: dict[str, object] = {}
    if program[-1:] == ["serve"] and rest and not rest[0].startswith("-"):
        values["model"], rest = rest[0], rest[1:]
    if engine is None:
        engine = _guess_engine(rest)
    flags = _LLAMA_FLAGS if engine is EngineName.LLAMA_SERVER else _VLLM_FLAGS
    extra = _read_flags(rest, flags, values)
    values.update(engine=engine, program=tuple(program), extra=tuple(extra))
    return EngineArgs.model_validate(values)


def _unwrap_shell(tokens: list[str]) -> list[str]:
    """`sh -c "exec vllm serve ..."` (a shell-form command) -> the argv the shell runs."""
    if len(tokens) == 3 and tokens[0].rsplit("/", 1)[-1] in _SHELLS and tokens[1] == "-c":
        try:
            inner = shlex.split(tokens[2])
        except ValueError:
            return tokens
        return inner[1:] if inner[:1] == ["exec"] else inner
    return tokens


def _split_program(tokens: list[str]) -> tuple[EngineName | None, list[str], list[str]]:
    """Separate the program (`vllm serve`, `python3 -m vllm...`, `llama-server`) from flags."""
    if not tokens:
        return None, [], []
    name = tokens[0].rsplit("/", 1)[-1]
    if name.startswith("python") and len(tokens) > 1 and not tokens[1].startswith("-"):
        # a console script as the kernel sees it: `/usr/bin/python3 /usr/local/bin/vllm serve`
        engine, program, rest = _split_program(tokens[1:])
        if engine is not None:
            return engine, [tokens[0], *program], rest
    if name == "vllm":
        end = 2 if tokens[1:2] == ["serve"] else 1
        return EngineName.VLLM, tokens[:end], tokens[end:]
    if name.startswith("python") and tokens[1:2] == ["-m"] and tokens[2:3] in _VLLM_MODULES:
        end = 4 if tokens[3:4] == ["serve"] else 3
        return EngineName.VLLM, tokens[:end], tokens[end:]
    if name in ("llama-server", "server") or name.startswith("llama-server"):
        return EngineName.LLAMA_SERVER, tokens[:1], tokens[1:]
    return None, [], tokens


def _guess_engine(args: list[str]) -> EngineName | None:
    """For a bare command (no program): llama-server's own short flags give it away."""
    names = {arg.split("=", 1)[0] for arg in args if arg.startswith("-")}
    if names & _LLAMA_ONLY_FLAGS:
        return EngineName.LLAMA_SERVER
    vllm_only = set(_VLLM_FLAGS) - _SHARED_FLAGS
    if any(name.replace("_", "-") in vllm_only for name in names if name.startswith("--")):
        return EngineName.VLLM
    return None


_Reader = tuple[str, Callable[[str], object]]


def _read_flags(args: list[str], flags: dict[str, _Reader], values: dict[str, object]) -> list[str]:
    """Consume the known flags into `values`; return everything else in order."""
    extra: list[str] = []
    position = 0
    while position < len(args):
        arg = args[position]
        name, has_value, inline = arg.partition("=")
        key = _flag_key(name)
        reader = flags.get(key)
        if reader is None:
            if not _read_dotted(key, inline if has_value else _next(args, position), values):
                extra.append(arg)
            elif not has_value:
                position += 1
            position += 1
            continue
        field, convert = reader
        if field == "served_model_names" and not has_value:
            names = _take_names(args, position + 1)
            values[field], position = tuple(names), position + 1 + len(names)
            continue
        value = inline if has_value else _next(args, position)
        consumed = 1 if has_value or value is None else 2
        parsed = convert(value) if value is not None else None
        if parsed is None:
            extra.extend(args[position : position + consumed])
        else:
            values[field] = parsed
        position += consumed
    return extra


def _flag_key(name: str) -> str:
    """vLLM accepts `--max_model_len` for `--max-model-len`; a dotted JSON key keeps its `_`."""
    if not name.startswith("--"):
        return name
    head, dot, tail = name.partition(".")
    return head.replace("_", "-") + dot + tail


def _read_dotted(key: str, value: str | None, values: dict[str, object]) -> bool:
    """vLLM's `--speculative-config.method mtp`: one key of a JSON argument."""
    prefix = "--speculative-config."
    if not key.startswith(prefix) or value is None or len(key) == len(prefix):
        return False
    spec = values.setdefault("speculative_config", {})
    if not isinstance(spec, dict):
        return False
    parsed = _json_scalar(value)
    spec[key[len(prefix) :]] = parsed
    return True


def _next(args: list[str], position: int) -> str | None:
    """The argument after `position`, unless it is another flag."""
    if position + 1 < len(args) and not args[position + 1].startswith("--"):
        return args[position + 1]
    return None


def _take_names(args: list[str], start: int) -> list[str]:
    """The values of a multi-value flag: arguments up to the next flag."""
    names = []
    for arg in args[start:]:
        if arg.startswith("-"):
            break
        names.append(arg)
    return names


def _json_object(value: str) -> dict[str, object] | None:
    try:
        parsed = json.loads(value)
    except (ValueError, RecursionError):
        return None
    return parsed if isinstance(parsed, dict) else None


def _json_scalar(value: str) -> object:
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        return value


def _text(value: str) -> str | None:
    return value or None


def _positive_int(value: str) -> int | None:
    number = to_int(value)
    return number if number is not None and number >= 0 else None


def _max_model_len(value: str) -> int | None:
    return -1 if value.strip().lower() in ("auto", "-1") else parse_human_int(value)


def _speculative(value: str) -> dict[str, object] | None:
    return _json_object(value)


_VLLM_FLAGS: dict[str, _Reader] = {
    "--model": ("model", _text),
    "--served-model-name": ("served_model_names", lambda value: (value,) if value else None),
    "--host": ("host", _text),
    "--port": ("port", _positive_int),
    "--max-model-len": ("max_model_len", _max_model_len),
    "--gpu-memory-utilization": ("gpu_memory_utilization", to_float),
    "--kv-cache-memory-bytes": ("kv_cache_memory_bytes", parse_human_int),
    "--kv-cache-dtype": ("kv_cache_dtype", _text),
    "--tensor-parallel-size": ("tensor_parallel_size", _positive_int),
    "-tp": ("tensor_parallel_size", _positive_int),
    "--quantization": ("quantization", _text),
    "-q": ("quantization", _text),
    "--speculative-config": ("speculative_config", _speculative),
}
_LLAMA_FLAGS: dict[str, _Reader] = {
    "-m": ("model", _text),
    "--model": ("model", _text),
    "-a": ("served_model_names", lambda value: (value,) if value else None),
    "--alias": ("served_model_names", lambda value: (value,) if value else None),
    "--host": ("host", _text),
    "--port": ("port", _positive_int),
    "-c": ("ctx_size", _positive_int),
    "--ctx-size": ("ctx_size", _positive_int),
    "-np": ("parallel_slots", _positive_int),
    "--parallel": ("parallel_slots", _positive_int),
    "-ngl": ("gpu_layers", _positive_int),
    "--gpu-layers": ("gpu_layers", _positive_int),
    "--n-gpu-layers": ("gpu_layers", _positive_int),
    "-md": ("draft_model", _text),
    "--model-draft": ("draft_model", _text),
    "--draft-max": ("draft_max", _positive_int),
    "--draft": ("draft_max", _positive_int),
    "--draft-n": ("draft_max", _positive_int),
    "-ctk": ("kv_cache_dtype", _text),
    "--cache-type-k": ("kv_cache_dtype", _text),
}
