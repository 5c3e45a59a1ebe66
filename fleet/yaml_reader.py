"""A fast, exact YAML reader: libyaml (PyYAML's C parser) by ruamel.yaml's YAML 1.2 rules.

`read_yaml` gives a one-document text's plain data (dicts, lists, scalars) and each key's
and item's `Spot` (line, column), or None wherever it cannot promise ruamel.yaml's
reading (tags, anchors, block scalars, dates, numbers not written canonically, duplicate
keys, bad YAML); the caller then reads the text with ruamel.yaml (`fleet.spec.ruamel_tree`)
for its values and error messages. This module does not import ruamel.yaml (about 7 ms
of `fleet validate`'s 0.17 s start-up); `PLAIN_SCALARS` is its table of implicit
types, which a unit test holds equal to ruamel.yaml's own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple

import yaml  # type: ignore[import-untyped]

from fleet.gc_pause import paused

_NO_KEYS: Mapping[Any, Any] = MappingProxyType({})  # one empty map shared by the leaves


@dataclass(frozen=True, slots=True)
class Spot:
    """Where a value sits: the 0-based line and column of its key (in a mapping) or of
    itself (in a sequence), whether it is a flow collection, and where its children are."""

    line: int
    column: int
    flow: bool = False
    keys: Mapping[Any, Spot] = field(default_factory=lambda: _NO_KEYS)
    items: tuple[Spot, ...] = ()

    def child(self, part: str | int) -> Spot | None:
        """The spot of a key or an item index inside this value, None if there is none."""
        if part in self.keys:
            return self.keys[part]
        if isinstance(part, int) and part < len(self.items):
            return self.items[part]
        return None


class YamlDoc(NamedTuple):
    """One parsed YAML document: plain dicts, lists and scalars, and their spots."""

    data: Any
    spot: Spot


# ruamel.yaml's YAML 1.2 implicit resolvers (ruamel.yaml.resolver.implicit_resolvers), in
# its order: (tag, pattern, first characters). `test_plain_scalar_table_is_ruamel_s`.
PLAIN_SCALARS: tuple[tuple[str, str, str], ...] = (
    ("bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    (
        "float",
        r"""^(?:
         [-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
        |[-+]?\.[0-9_]+(?:[eE][-+][0-9]+)?
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))$""",
        "-+0123456789.",
    ),
    (
        "int",
        r"""^(?:[-+]?0b[0-1_]+
        |[-+]?0o?[0-7_]+
        |[-+]?[0-9_]+
        |[-+]?0x[0-9a-fA-F_]+)$""",
        "-+0123456789",
    ),
    ("merge", r"^(?:<<)$", "<"),
    (
        "null",
        r"""^(?: ~
        |null|Null|NULL
        | )$""",
        "~nN",
    ),
    (
        "timestamp",
        r"""^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]
        |[0-9][0-9][0-9][0-9] -[0-9][0-9]? -[0-9][0-9]?
        (?:[Tt]|[ \t]+)[0-9][0-9]?
        :[0-9][0-9] :[0-9][0-9] (?:\.[0-9]*)?
        (?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$""",
        "0123456789",
    ),
    ("value", r"^(?:=)$", "="),
    ("yaml", r"^(?:!|&|\*)$", "!&*"),
)
# null also matches the empty scalar, which has no first character
EMPTY_TAGS = ("null",)


def _plain_tag_table() -> dict[str, list[tuple[str, re.Pattern[str]]]]:
    table: dict[str, list[tuple[str, re.Pattern[str]]]] = {}
    for tag, pattern, first in PLAIN_SCALARS:
        compiled = re.compile(pattern, re.X)
        for char in (*first, *([""] if tag in EMPTY_TAGS else [])):
            table.setdefault(char, []).append((tag, compiled))
    return table


_PLAIN_TAGS = _plain_tag_table()
_DECIMAL = re.compile(r"-?(?:0|[1-9][0-9]*)")
_LOADER: Any = getattr(yaml, "CBaseLoader", yaml.BaseLoader)


def plain_tag(value: str) -> str | None:
    """The type ruamel.yaml gives an unquoted scalar (`int`, `null`, ...); None for text."""
    for tag, regexp in _PLAIN_TAGS.get(value[:1], ()):
        if regexp.match(value):
            return str(tag)
    return None


class _Unsure(Exception):
    """The fast reader cannot promise ruamel.yaml's reading of this text."""


def read_yaml(text: str) -> YamlDoc | None:
    """Plain data and spots of a one-document YAML text; None where only ruamel can say."""
    loader = _LOADER(text)
    try:
        with paused():  # the tree holds no cycles: collections while it grows only cost
            return _document(loader.get_event)
    except (_Unsure, yaml.YAMLError):
        return None
    finally:
        loader.dispose()


def _document(next_event: Callable[[], Any]) -> YamlDoc:
    next_event()  # the stream starts
    start = next_event()
    if isinstance(start, yaml.StreamEndEvent):
        return YamlDoc(None, Spot(0, 0))
    if start.version is not None or start.tags:
        raise _Unsure("a %YAML or %TAG directive")
    data, spot = _node(next_event(), next_event, 0, 0)
    next_event()  # the document ends
    if not isinstance(next_event(), yaml.StreamEndEvent):
        raise _Unsure("more than one document")
    return YamlDoc(data, spot)


def _node(event: Any, next_event: Callable[[], Any], line: int, column: int) -> tuple[Any, Spot]:
    if isinstance(event, yaml.ScalarEvent):
        return _scalar(event), Spot(line, column)
    if isinstance(event, yaml.AliasEvent) or event.anchor is not None or event.tag is not None:
        raise _Unsure("an anchor, an alias or a tag")
    flow = bool(event.flow_style)  # ruamel.yaml calls an empty collection block style
    if isinstance(event, yaml.MappingStartEvent):
        data: dict[str, Any] = {}
        keys: dict[str, Spot] = {}
        while not isinstance(key := next_event(), yaml.MappingEndEvent):
            name = _scalar(key) if isinstance(key, yaml.ScalarEvent) else None
            if not isinstance(name, str) or name in data:
                raise _Unsure("a key that is not text, or a key given twice")
            mark = key.start_mark
            data[name], keys[name] = _node(next_event(), next_event, mark.line, mark.column)
        return data, Spot(line, column, flow and bool(keys), keys=keys)
    values: list[Any] = []
    items: list[Spot] = []
    while not isinstance(item := next_event(), yaml.SequenceEndEvent):
        value, spot = _node(item, next_event, item.start_mark.line, item.start_mark.column)
        values.append(value)
        items.append(spot)
    return values, Spot(line, column, flow and bool(items), items=tuple(items))


def _scalar(event: Any) -> Any:
    """The value ruamel.yaml reads, or _Unsure when it would read something richer."""
    if event.anchor is not None or event.tag is not None or event.style in ("|", ">"):
        raise _Unsure("a tagged, anchored or block scalar")
    value: str = event.value
    tag = plain_tag(value) if event.implicit[0] else None
    if tag is None:
        return value
    if tag == "null":
        return None
    if tag == "bool":
        return value.lower() == "true"
    if tag == "int" and _DECIMAL.fullmatch(value):
        return int(value)
    if tag == "float" and _canonical_float(value) is not None:
        return float(value)
    raise _Unsure(f"a {tag} written {value!r}")


def _canonical_float(value: str) -> float | None:
    try:
        number = float(value)
    except ValueError:
        return None
    return number if repr(number) == value else None


def plain(node: Any) -> Any:
    """Nested mappings and sequences (ruamel round-trip nodes among them) as plain dicts
    with text keys, lists and scalars."""
    if isinstance(node, dict):
        return {str(k): plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [plain(v) for v in node]
    return node
