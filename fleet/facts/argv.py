"""Reading an engine's argv (entrypoint + command): the neutral model and the flag reader.

Each engine module under `fleet.engines` declares its own program detection and flag
table; `fleet.engines.parse_engine_argv` finds the engine an argv starts and reads it with
that table through `read_flags` here. Called with the argv a host's runtime reports of a
seat (a container's `Path` + `Args`, or the process's `/proc/<pid>/cmdline`) to check that
a running seat carries every flag its spec implies, and by the inventory to report what
really runs. `--flag value` and `--flag=value` alike, and the `--flag_name` spelling.
Sizes follow `human_readable_int`: `40k` is decimal, `40K` binary (`10G` = 10 GiB);
`10GiB` is not a size here. Every argument not understood is kept verbatim, in order, in
`extra`.
"""

import json
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import TypeAlias

from fleet.base import CoreModel
from fleet.facts._text import to_float, to_int

_HUMAN_INT = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
_SHELLS = frozenset({"sh", "bash", "dash"})

Reader: TypeAlias = tuple[str, Callable[[str], object]]
"""A flag's field of `EngineArgs` and how its value is read (None: not a value of it).

A field `speculative_config.num_steps` sets one key of that dict field: an engine whose
speculative settings are several flags reads them into one dict."""


class EngineArgs(CoreModel):
    """The engine flags fleet checks; an argument not given is None.

    `engine` is the name of the engine the argv starts (a seat's `engine`), None when no
    engine module recognises it. `max_model_len` is the per-request context (-1 for
    `auto`); a llama-server's whole context (`-c`) is `ctx_size`. `speculative_config` is
    the engine's speculative-decoding settings, read into one dict (keys as the engine
    names them).
    """

    engine: str | None = None
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


def argv_of(cmdline: str) -> tuple[str, ...]:
    """A process's argv from its `/proc/<pid>/cmdline` as the fact script prints it, each
    argument ended by a NUL (one holding a newline stays one argument); text without a
    NUL is an older script's output, one argument a line (the kernel ends every argument
    with a NUL, so only a process that rewrote its own argv prints none)."""
    separator = "\0" if "\0" in cmdline else "\n"
    return tuple(arg for arg in cmdline.split(separator) if arg)


def parse_human_int(value: str) -> int | None:
    """`human_readable_int`: `25.6k` -> 25600, `16K` -> 16384, `4096` -> 4096."""
    text = value.strip()
    if match := _HUMAN_INT.fullmatch(text):
        number, suffix = match.groups()
        if suffix in _DECIMAL:
            return int(float(number) * _DECIMAL[suffix])
        return int(number) * _BINARY[suffix] if "." not in number else None
    return to_int(text) if "," not in text else None


def unwrap_shell(tokens: list[str]) -> list[str]:
    """`sh -c "exec ENGINE ..."` (a shell-form command) -> the argv the shell runs."""
    if len(tokens) == 3 and tokens[0].rsplit("/", 1)[-1] in _SHELLS and tokens[1] == "-c":
        try:
            inner = shlex.split(tokens[2])
        except ValueError:
            return tokens
        return inner[1:] if inner[:1] == ["exec"] else inner
    return tokens


def program_name(token: str) -> str:
    """The file name of a program path: `/usr/local/bin/vllm` -> `vllm`."""
    return token.rsplit("/", 1)[-1]


def flag_value(args: Sequence[str], *names: str) -> str | None:
    """`--flag VALUE` or `--flag=VALUE` in an engine argv (the last one wins)."""
    found = None
    for index, arg in enumerate(args):
        name, equals, value = arg.partition("=")
        if name in names:
            found = value if equals else (args[index + 1] if index + 1 < len(args) else "")
    return found


def read_flags(
    args: list[str],
    flags: Mapping[str, Reader],
    values: dict[str, object],
    dotted: tuple[str, str] | None = None,
) -> list[str]:
    """Consume the known flags into `values`; return everything else in order.

    `dotted` is (`--flag.`, field): `--flag.key value` sets one key of that dict field.
    """
    extra: list[str] = []
    position = 0
    while position < len(args):
        arg = args[position]
        name, has_value, inline = arg.partition("=")
        key = flag_key(name)
        reader = flags.get(key)
        if reader is None:
            value = inline if has_value else _next(args, position)
            if not _read_dotted(key, value, values, dotted):
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
            _store(values, field, parsed)
        position += consumed
    return extra


def _store(values: dict[str, object], field: str, parsed: object) -> None:
    """`field` = parsed; `field.key` sets one key of a dict field."""
    name, dot, key = field.partition(".")
    if not dot:
        values[name] = parsed
        return
    held = values.setdefault(name, {})
    if isinstance(held, dict):
        held[key] = parsed


def flag_key(name: str) -> str:
    """`--some_flag` is `--some-flag`; a dotted JSON key keeps its `_`."""
    if not name.startswith("--"):
        return name
    head, dot, tail = name.partition(".")
    return head.replace("_", "-") + dot + tail


def _read_dotted(
    key: str, value: str | None, values: dict[str, object], dotted: tuple[str, str] | None
) -> bool:
    """`--flag.method mtp`: one key of a JSON argument."""
    if dotted is None or value is None:
        return False
    prefix, field = dotted
    if not key.startswith(prefix) or len(key) == len(prefix):
        return False
    spec = values.setdefault(field, {})
    if not isinstance(spec, dict):
        return False
    spec[key[len(prefix) :]] = json_scalar(value)
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


def json_object(value: str) -> dict[str, object] | None:
    """A JSON object argument, None when it is not one."""
    try:
        parsed = json.loads(value)
    except (ValueError, RecursionError):
        return None
    return parsed if isinstance(parsed, dict) else None


def json_scalar(value: str) -> object:
    """A JSON value, else the text itself."""
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        return value


def text(value: str) -> str | None:
    """A non-empty text value."""
    return value or None


def names(value: str) -> tuple[str, ...] | None:
    """One served name."""
    return (value,) if value else None


def positive_int(value: str) -> int | None:
    """A whole number >= 0."""
    number = to_int(value)
    return number if number is not None and number >= 0 else None


def fraction(value: str) -> float | None:
    """A number such as a memory fraction."""
    return to_float(value)
