"""Facts from an SGLang start-up log, in the engine-neutral `EngineReport`.

Lines are `[YYYY-MM-DD HH:MM:SS TP0] message` (`srt/utils/common.py:2630`, the `TPn`
prefix from `srt/managers/scheduler.py:6289`). Read, as SGLang 0.5.23 prints them
(tests/corpus/sglang-logs/SOURCES.md names each source line): the scheduler's
`max_total_num_tokens=N, ..., context_len=C, ...` (KV tokens and the context),
`KV Cache is allocated. [dtype: D, ]#tokens: N, K size: X GB, V size: Y GB` (or
`KV size: X GB`), `Load weight end. ... mem usage=W GB.` (weights on one GPU),
`server_args={...}` (0.5.23; `server_args=ServerArgs(...)` before: model, served name,
tp, speculative algorithm), and the start-up
failures `Not enough memory. Please try to increase --mem-fraction-static.`,
`User-specified context_length (A) is greater than the derived context_length (B)` and
CUDA out of memory. SGLang's GB are GiB (`GB = 1024 ** 3`). Only the last start is read.
Pure; odd input gives empty facts.
"""

from __future__ import annotations

import re

from fleet.engines.report import EngineError, EngineReport, ErrorKind, SpeculativeFact
from fleet.facts._text import parse_assignments, parse_dict_literal, to_float, to_int

_LINE = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?(?: [A-Z]+\d+)*\] (.*)$")
_CAPACITY = re.compile(r"max_total_num_tokens=(\d+),.*?context_len=(\d+)")
_POOL = re.compile(
    r"KV Cache is allocated\. (?:dtype: (\S+), )?#tokens: (\d+), "
    r"(?:K size: ([\d.]+) GB, V size: ([\d.]+) GB|KV size: ([\d.]+) GB)"
)
_WEIGHTS = re.compile(r"Load weight end\..*?mem usage=([\d.]+) GB")
_ARGS = re.compile(r"server_args=(\{.*\})|server_args=ServerArgs\((.*)\)")
_CONTEXT = re.compile(
    r"User-specified context_length \((\d+)\) is greater than the derived context_length \((\d+)\)"
)
_ERRORS: tuple[tuple[ErrorKind, re.Pattern[str]], ...] = (
    (ErrorKind.MAX_MODEL_LEN_TOO_LONG, _CONTEXT),
    (ErrorKind.NO_KV_MEMORY, re.compile(r"Not enough memory\. Please try to increase")),
    (ErrorKind.CUDA_OOM, re.compile(r"CUDA out of memory|OutOfMemoryError")),
)


def read_log(text: str) -> EngineReport:
    """The facts an SGLang start-up log states; only its last start is read."""
    messages = [m.group(1) for line in text.splitlines() if (m := _LINE.match(line.strip()))]
    starts = [i for i, m in enumerate(messages) if m.startswith("server_args=")]
    messages = messages[starts[-1] :] if starts else messages
    tails = [line.strip() for line in text.splitlines() if not _LINE.match(line.strip())]
    found: dict[str, object] = {}
    for message in messages:
        _collect(message, found)
    errors = _errors([*messages, *tails])
    return _report(found, errors)


def _collect(message: str, found: dict[str, object]) -> None:
    if (match := _CAPACITY.search(message)) and "tokens" not in found:
        found["tokens"], found["context"] = int(match.group(1)), int(match.group(2))
    elif (match := _POOL.search(message)) and "pool" not in found:
        dtype, pool, k, v, kv = match.groups()
        found["pool"], found["dtype"] = int(pool), dtype
        found["kv_gib"] = (to_float(k) or 0) + (to_float(v) or 0) if kv is None else to_float(kv)
    elif (match := _WEIGHTS.search(message)) and "weights" not in found:
        found["weights"] = to_float(match.group(1))
    elif (match := _ARGS.search(message)) and "args" not in found:
        literal, assignments = match.groups()
        found["args"] = (
            parse_dict_literal(literal) if literal is not None else parse_assignments(assignments)
        )


def _errors(lines: list[str]) -> tuple[EngineError, ...]:
    errors: list[EngineError] = []
    for line in lines:
        kind = next((k for k, pattern in _ERRORS if pattern.search(line)), None)
        if kind is not None and all(e.message != line for e in errors):
            errors.append(EngineError(kind=kind, message=line))
    return tuple(errors)


def _report(found: dict[str, object], errors: tuple[EngineError, ...]) -> EngineReport:
    args = found.get("args")
    settings = args if isinstance(args, dict) else {}
    tokens = found.get("tokens") or found.get("pool")
    context = found.get("context") or settings.get("context_length")
    served = settings.get("served_model_name") or settings.get("model_path")
    method = settings.get("speculative_algorithm")
    requested, derived = _context_figures(errors)
    return EngineReport(
        version=settings.get("version") if isinstance(settings.get("version"), str) else None,
        model=settings.get("model_path") if isinstance(settings.get("model_path"), str) else None,
        served_names=(served,) if isinstance(served, str) else (),
        max_model_len=to_int(str(context)) if context is not None else None,
        tensor_parallel_size=to_int(str(settings.get("tp_size"))),
        kv_cache_dtype=_dtype(found.get("dtype")),
        speculative=SpeculativeFact(
            method=method, num_tokens=to_int(str(settings.get("speculative_num_steps")))
        )
        if isinstance(method, str)
        else None,
        weights_gib=found.get("weights") if isinstance(found.get("weights"), float) else None,
        kv_cache_gib=found.get("kv_gib") if isinstance(found.get("kv_gib"), float) else None,
        kv_cache_tokens=tokens if isinstance(tokens, int) else None,
        requested_max_model_len=requested,
        derived_max_model_len=derived,
        errors=errors,
    )


def _dtype(value: object) -> str | None:
    return value.removeprefix("torch.") if isinstance(value, str) else None


def _context_figures(errors: tuple[EngineError, ...]) -> tuple[int | None, int | None]:
    for error in errors:
        match = _CONTEXT.search(error.message)
        if match:
            return int(match.group(1)), int(match.group(2))
    return None, None
