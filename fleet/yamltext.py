"""One YAML emitter for everything fleet writes, so outputs are stable and diff cleanly.

`dump_yaml` writes ruamel.yaml's round-trip output with fleet's formatting. Plain data
(dicts of lists, dicts and scalars that ruamel would write unquoted) takes a direct path
that writes the same bytes ruamel would, far faster: the gateway renderer writes one entry
per alias. Anything else (comments, quoting, None, nested lists, ruamel's own scalar
types) goes through ruamel.yaml itself.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from io import StringIO
from typing import Any

from ruamel.yaml import YAML

from fleet.yaml_reader import plain_tag

_TEXT = re.compile(r"[A-Za-z0-9_/][A-Za-z0-9_./:@+=-]*")
_FLOAT = re.compile(r"-?[0-9]+\.[0-9]+")
_KEY_MAX = 100  # ruamel writes keys of 128 characters and more as complex keys


def make_yaml() -> YAML:
    """A round-trip YAML instance with fleet's formatting: 2-space indents, no wrapping."""
    yaml = YAML(typ="rt")
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096
    yaml.preserve_quotes = True
    return yaml


def dump_yaml(data: Any, header: str = "") -> str:
    """YAML text of `data`, after an optional comment header."""
    fast = plain_dump(data)
    if fast is not None:
        return header + fast
    stream = StringIO()
    make_yaml().dump(data, stream)
    return header + stream.getvalue()


def load_yaml(text: str) -> Any:
    """Round-trip load (comments and order kept)."""
    return make_yaml().load(StringIO(text))


class _NotPlain(Exception):
    """The data holds something only ruamel.yaml knows how to write."""


def plain_dump(data: Any) -> str | None:
    """ruamel's text of a non-empty plain dict, or None when ruamel must write it."""
    if type(data) is not dict or not data:
        return None
    try:
        return "".join(f"{line}\n" for line in _mapping(data, ""))
    except _NotPlain:
        return None


def _mapping(data: dict[Any, Any], pad: str, first: str | None = None) -> Iterator[str]:
    """Lines of a block mapping whose keys sit at `pad` (the first after `first`)."""
    for key, value in data.items():
        lead = pad if first is None else first
        first = None
        name = _key(key)
        if type(value) is dict and value:
            yield f"{lead}{name}:"
            yield from _mapping(value, pad + "  ")
        elif type(value) is list and value:
            yield f"{lead}{name}:"
            yield from _sequence(value, pad + "  ")
        elif type(value) in (dict, list):
            yield f"{lead}{name}: {'{}' if type(value) is dict else '[]'}"
        else:
            yield f"{lead}{name}: {_scalar(value)}"


def _sequence(items: list[Any], pad: str) -> Iterator[str]:
    """Lines of a block sequence whose dashes sit at `pad`."""
    for item in items:
        if type(item) is dict and item:
            yield from _mapping(item, pad + "  ", first=f"{pad}- ")
        elif type(item) in (dict, list):
            raise _NotPlain("a list or an empty mapping in a list")
        else:
            yield f"{pad}- {_scalar(item)}"


def _key(key: Any) -> str:
    if type(key) is not str or len(key) > _KEY_MAX:
        raise _NotPlain("a key that is not short text")
    return _scalar(key)


def _scalar(value: Any) -> str:
    """The scalar as ruamel writes it unquoted, or _NotPlain."""
    if value is True or value is False:
        return "true" if value else "false"
    kind = type(value)
    if kind is int:
        return str(value)
    if kind is float and _FLOAT.fullmatch(repr(value)):
        return repr(value)
    if kind is str and _TEXT.fullmatch(value) and value[-1] != ":" and not plain_tag(value):
        return str(value)
    raise _NotPlain(f"{value!r} needs ruamel.yaml")
