"""The start-up failures `fleet.engines.vllm.log` recognises in a vLLM log, and their figures.

An error is a message on an ERROR/CRITICAL line or on a header-less line (a traceback's
last line), matched against one pattern per kind; the first kind that matches wins. The
apply health gate and the findings print `EngineError.message`, so it is kept as logged,
except for a rejected `--max-model-len`: older releases raise that one as a plain
`ValueError: <text>`, newer ones (0.25.1 does) from `ModelConfig`'s pydantic validation,
which wraps the same text as `Value error, <text> [type=value_error, input_value=...,
input_type=...]`. Both forms give the same message, vLLM's own sentence from
`User-specified` on, and `max_model_len_figures` reads its two numbers.
"""

from __future__ import annotations

import math
import re

from fleet.engines.report import EngineError, ErrorKind
from fleet.facts._text import to_float, to_int

# vLLM's ValueError, from `_get_and_verify_max_len` (config.py / config/model.py): the
# derived length is printed as `(max_position_embeddings=2048.0 or model_max_length=None
# in model's config.json)`, older releases without the `or ...` part.
_MAX_LEN_REJECTED = re.compile(
    r"User-specified max_model_len \((\d+)\) is greater than the derived max_model_len "
    r"\((?:\w+=)?(\d+(?:\.\d*)?)"
)
_PYDANTIC_TAIL = re.compile(r" \[type=\w+, input_value=.*\]$")

_ERRORS: tuple[tuple[ErrorKind, re.Pattern[str]], ...] = (
    (ErrorKind.MAX_MODEL_LEN_TOO_LONG, _MAX_LEN_REJECTED),
    (ErrorKind.CUDA_OOM, re.compile(r"CUDA out of memory|OutOfMemoryError|not enough GPU memory")),
    (ErrorKind.NO_KV_MEMORY, re.compile(r"No available memory for the cache blocks")),
    (ErrorKind.KV_CACHE_TOO_SMALL, re.compile(r"KV cache is needed, which is larger than")),
    (ErrorKind.FREE_MEMORY_TOO_LOW, re.compile(r"Free memory on device.*is less than desired")),
    (ErrorKind.ILLEGAL_MEMORY_ACCESS, re.compile(r"illegal memory access")),
    (ErrorKind.CUBLAS, re.compile(r"CUBLAS_STATUS_\w+|cuBLAS error")),
)


def collect_error(message: str, errors: list[EngineError]) -> None:
    """Record a fatal-error message once, with the first kind it matches."""
    for kind, pattern in _ERRORS:
        if match := pattern.search(message):
            if kind is ErrorKind.MAX_MODEL_LEN_TOO_LONG:
                message = _PYDANTIC_TAIL.sub("", message[match.start() :]).rstrip()
            error = EngineError(kind=kind, message=message)
            if error not in errors:
                errors.append(error)
            return


def max_model_len_figures(errors: tuple[EngineError, ...]) -> tuple[int | None, int | None]:
    """(requested, derived) max_model_len of the first rejected-length error, else Nones."""
    for error in errors:
        match = _MAX_LEN_REJECTED.match(error.message)
        if error.kind is ErrorKind.MAX_MODEL_LEN_TOO_LONG and match:
            return to_int(match.group(1)), _whole(match.group(2))
    return None, None


def _whole(text: str) -> int | None:
    """`'2048.0'` -> 2048 (vLLM prints the derived length as a float)."""
    number = to_float(text)
    if number is None or not math.isfinite(number):
        return None
    return int(number)
