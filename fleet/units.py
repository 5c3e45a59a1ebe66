"""Sizes and durations as operators write them: `10GiB`, `10240MiB`, `512MB` or a plain
integer of bytes; `30s`, `5m`, `1h` or a plain number of seconds.

Used by the spec models (KV budgets, GPU memory, the loop's bench interval) and by
renderers that print them back.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

_UNITS = {
    "": 1,
    "B": 1,
    "KIB": 1024,
    "MIB": 1024**2,
    "GIB": 1024**3,
    "TIB": 1024**4,
    "KB": 1000,
    "MB": 1000**2,
    "GB": 1000**3,
    "TB": 1000**4,
}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")
SIZE_HINT = "a size like 10GiB, 10240MiB or an integer number of bytes"


def parse_bytes(value: object) -> int:
    """Turn `10GiB`, `10240MiB`, `1.5GB` or an int into a number of bytes."""
    if isinstance(value, bool):
        raise ValueError(f"expected {SIZE_HINT}, got {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"expected {SIZE_HINT}, got a negative number")
        return value
    if isinstance(value, str):
        match = _SIZE.match(value)
        if match and match.group(2).upper() in _UNITS:
            return int(float(match.group(1)) * _UNITS[match.group(2).upper()])
    raise ValueError(f"expected {SIZE_HINT}, got {value!r}")


def format_bytes(size: int) -> str:
    """The shortest exact binary spelling of a size: 10GiB, 10240MiB stays 10GiB."""
    for unit in ("TiB", "GiB", "MiB", "KiB"):
        factor = _UNITS[unit.upper()]
        if size >= factor and size % factor == 0:
            return f"{size // factor}{unit}"
    return str(size)


ByteSize = Annotated[int, BeforeValidator(parse_bytes), PlainSerializer(format_bytes)]


def human_bytes(size: int) -> str:
    """A size as people read it in a plan: 65.5 GB, 412 GB, 980 B (decimal units, as df -H)."""
    for unit, factor in (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if size >= factor:
            value = size / factor
            return f"{value:.0f} {unit}" if value >= 100 else f"{value:.1f} {unit}"
    return f"{size} B"


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)?\s*$")
_SECONDS = {None: 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
DURATION_HINT = "a duration like 30s, 5m or 1h"


def parse_seconds(value: object) -> float:
    """Turn `30s`, `5m`, `1h`, `30d` or a number into seconds."""
    if isinstance(value, bool):
        raise ValueError(f"expected {DURATION_HINT}, got {value!r}")
    if isinstance(value, int | float):
        if value < 0:
            raise ValueError(f"expected {DURATION_HINT}, got a negative number")
        return float(value)
    if isinstance(value, str) and (match := _DURATION.match(value)):
        return float(match.group(1)) * _SECONDS[match.group(2)]
    raise ValueError(f"expected {DURATION_HINT}, got {value!r}")


def format_seconds(seconds: float) -> str:
    """The shortest exact spelling: 300 -> 5m, 3600 -> 1h, 45 -> 45s."""
    for unit in ("h", "m"):
        if seconds >= _SECONDS[unit] and seconds % _SECONDS[unit] == 0:
            return f"{int(seconds // _SECONDS[unit])}{unit}"
    return f"{seconds:g}s"


Seconds = Annotated[
    float,
    BeforeValidator(parse_seconds),
    PlainSerializer(format_seconds),
    WithJsonSchema({"type": ["string", "number"], "pattern": r"^\d+(\.\d+)?(s|m|h|d)?$"}),
]
