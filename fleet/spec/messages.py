"""Plain-language messages for pydantic's validation errors in desired/ files.

`load` calls `describe_error` for each error so that a user reads `unknown key
'kv_cache_byte' (did you mean 'kv_cache_bytes'?)` instead of pydantic's internals.
"""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any

from pydantic import BaseModel
from pydantic_core import ErrorDetails

from fleet.spec.host_settings import WithSettings

_PLAIN = {
    "int_parsing": "expected a whole number",
    "int_type": "expected a whole number",
    "int_from_float": "expected a whole number",
    "float_parsing": "expected a number",
    "float_type": "expected a number",
    "string_type": "expected a text value",
    "bool_type": "expected true or false",
    "bool_parsing": "expected true or false",
    "list_type": "expected a list",
    "tuple_type": "expected a list",
    "dict_type": "expected a mapping of keys to values",
    "model_type": "expected a mapping of keys to values",
    "model_attributes_type": "expected a mapping of keys to values",
}


def describe_error(error: ErrorDetails, model: type[BaseModel]) -> str:
    """One readable line for one pydantic error, naming the field and what was wrong."""
    loc = tuple(error["loc"])
    kind = error["type"]
    field = dotted(loc)
    if kind == "extra_forbidden":
        return _unknown_key(loc, model)
    if kind == "backend_refused":  # a backend's own sentence, which names the key
        return error["msg"]
    if kind == "missing":
        return f"missing required key {field!r}"
    got = _shown(error.get("input"))
    if kind in _PLAIN:
        return f"{field}: {_PLAIN[kind]}, got {got}"
    if kind in ("greater_than_equal", "less_than_equal"):
        bound = (error.get("ctx") or {}).get("ge" if kind == "greater_than_equal" else "le")
        return f"{field}: expected {'at least' if kind[0] == 'g' else 'at most'} {bound}, got {got}"
    if kind == "literal_error":
        expected = (error.get("ctx") or {}).get("expected", "")
        return f"{field}: expected one of {expected}, got {got}"
    message = error["msg"].removeprefix("Value error, ")
    return f"{field}: {message}" if field else message


def dotted(loc: tuple[Any, ...]) -> str:
    """('gpus', 0, 'memory') -> 'gpus[0].memory'."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _unknown_key(loc: tuple[Any, ...], model: type[BaseModel]) -> str:
    key = str(loc[-1])
    known = sorted(_fields_at(model, loc[:-1]))
    match = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    where = f" in {dotted(loc[:-1])}" if loc[:-1] else ""
    hint = f" (did you mean {match[0]!r}?)" if match else f"; known keys: {', '.join(known)}"
    return f"unknown key {key!r}{where}{hint}"


def _fields_at(model: type[BaseModel], loc: tuple[Any, ...]) -> set[str]:
    """Field names of the model found by following `loc` from `model` (at the top of a file
    whose backend owns some keys, those too: a seat's engine's)."""
    if not loc and issubclass(model, WithSettings):
        return model.neutral_keys() | model.backend_keys()
    current: Any = model
    for part in loc:
        if isinstance(part, int) or not _is_model(current):
            continue
        info = current.model_fields.get(part)
        if info is None:
            return set()
        current = _inner_model(info.annotation)
    return set(current.model_fields) if _is_model(current) else set()


def _is_model(obj: Any) -> bool:
    return isinstance(obj, type) and issubclass(obj, BaseModel)


def _inner_model(annotation: Any) -> Any:
    """The BaseModel inside Optional[...], tuple[..., ...] or dict[str, ...], if any."""
    if _is_model(annotation):
        return annotation
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType, tuple, list, dict):
        for arg in typing.get_args(annotation):
            found = _inner_model(arg)
            if found is not None:
                return found
    return None
