"""Bounds on a YAML text before anything builds a tree of it: size, characters, depth,
alias expansion and the length of integers.

A reviewed-by-nobody pull request can put any bytes in desired/: an alias bomb (a few
hundred bytes whose aliases expand to millions of values), a thousand nested lists (the
readers recurse), a NUL byte, a 5,000-digit integer (Python refuses to convert it). Each
is refused here, with its line, before `fleet.yaml_reader` or ruamel.yaml read the text.
`check_bounds` walks the parser's events only (libyaml's, else ruamel.yaml's where
libyaml cannot read the text), which keeps no tree and expands no alias. Called by
`fleet.spec.load` for every desired/ file, and (`yaml_bounds_problem`) for the gateway's
config, which is a file on a host.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import yaml  # type: ignore[import-untyped]

MAX_BYTES = 1 << 20  # a desired/ file; the example fleet's largest is ~2 KB
MAX_DEPTH = 32  # nested mappings and sequences
MAX_VALUES = 100_000  # values once every alias is expanded (more for a longer text: below)
MAX_DIGITS = 64  # digits of an unquoted integer
# C0 controls but tab, line feed and carriage return; DEL; C1 controls
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_INTEGER = re.compile(r"[-+]?(?:0[box])?[0-9a-fA-F_]+")
_LOADER: Any = getattr(yaml, "CBaseLoader", yaml.BaseLoader)


class Bound(NamedTuple):
    """Why a text is refused, and the 1-based line it is refused at."""

    line: int
    message: str


def check_bounds(text: str, max_bytes: int = MAX_BYTES) -> Bound | None:
    """The first bound the text breaks, or None (bad syntax is the readers' to report)."""
    size = len(text.encode("utf-8", errors="replace"))
    if size > max_bytes:
        return Bound(1, f"the file is {size:,} bytes; at most {max_bytes:,} are read")
    control = _CONTROL.search(text)
    if control is not None:
        line = text.count("\n", 0, control.start()) + 1
        return Bound(line, f"control character U+{ord(control.group()):04X} in the text")
    try:
        return _walk(_libyaml_events(text), _value_limit(text))
    except yaml.YAMLError:
        pass
    try:
        return _walk(_ruamel_events(text), _value_limit(text))
    except Exception:  # ruamel's syntax errors: the reader reports them
        return None


def _libyaml_events(text: str) -> Iterator[Any]:
    loader = _LOADER(text)
    try:
        while loader.check_event():
            yield loader.get_event()
    finally:
        loader.dispose()


def _ruamel_events(text: str) -> Iterable[Any]:
    from io import StringIO

    from ruamel.yaml import YAML

    return YAML(typ="rt").parse(StringIO(text))  # type: ignore[no-any-return]


class _Frame(NamedTuple):
    anchor: str | None
    size: list[int]  # one cell, so the frame can stay a tuple


def _value_limit(text: str) -> int:
    """How many values the text may expand to: a text without aliases holds fewer values
    than it has characters, so a long plain file (a gateway config of thousands of entries)
    passes, while aliases that expand a few hundred bytes past 100,000 values do not."""
    return max(MAX_VALUES, len(text))


def _walk(events: Iterable[Any], limit: int = MAX_VALUES) -> Bound | None:
    """Depth, expanded size and integer length, from the event stream alone."""
    sizes: dict[str, int] = {}
    stack: list[_Frame] = [_Frame(None, [0])]
    total = 0  # the values of every frame on the stack: a closed frame's move to its parent
    for event in events:
        kind = type(event).__name__
        line = event.start_mark.line + 1 if event.start_mark is not None else 1
        if kind in ("MappingStartEvent", "SequenceStartEvent"):
            if len(stack) > MAX_DEPTH:
                return Bound(line, f"nested more than {MAX_DEPTH} levels deep")
            stack.append(_Frame(event.anchor, [1]))
            total += 1
            continue
        if kind in ("MappingEndEvent", "SequenceEndEvent"):
            frame = stack.pop()
            added = frame.size[0]
            total -= added  # counted again below, in its parent
            if frame.anchor is not None:
                sizes[frame.anchor] = added
        elif kind == "AliasEvent":
            if event.anchor not in sizes:  # an alias of a collection still open
                return Bound(line, f"alias *{event.anchor} refers to a value that holds it")
            added = sizes[event.anchor]
        elif kind == "ScalarEvent":
            if _long_integer(event):
                return Bound(line, f"an integer of {len(event.value):,} digits")
            added = 1
            if event.anchor is not None:
                sizes[event.anchor] = 1
        else:
            continue
        stack[-1].size[0] += added
        total += added
        if total > limit:
            return Bound(line, f"aliases expand to more than {limit:,} values")
    return None


def _long_integer(event: Any) -> bool:
    value: str = event.value
    plain = event.style is None or event.style == ""
    return bool(plain and len(value) > MAX_DIGITS and _INTEGER.fullmatch(value))


HOST_MAX_BYTES = 8 << 20  # YAML a host returns: a LiteLLM config of thousands of entries < 1 MiB


def yaml_bounds_problem(text: str, *, max_bytes: int = HOST_MAX_BYTES) -> str | None:
    """The same bounds on YAML a host returns (the gateway's config, read by
    `fleet.gateways.litellm.config.read_config`): what breaks one, as `line N: ...`."""
    bound = check_bounds(text, max_bytes)
    return None if bound is None else f"line {bound.line}: {bound.message}"
