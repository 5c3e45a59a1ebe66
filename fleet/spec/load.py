"""Turn the text of desired/ files into a `DesiredFleet`, with every problem at file:line.

Called by the command line (through `reconciler.desired`, which reads the files) and by
tests. The input is a mapping of paths relative to desired/ (`seats/sec.yaml`) to text, so
this module does no I/O. Each file is parsed once: `read_yaml` reads it with libyaml
(PyYAML's C parser) by ruamel.yaml's YAML 1.2 rules; where it cannot promise ruamel's
reading (tags, anchors, block scalars, dates, numbers not written canonically, duplicate
keys, bad YAML) ruamel.yaml's round-trip loader reads it, so values and error messages
stay ruamel's. Either way each key and item keeps its `Spot` (line, column) in `Sources`
for `validate`. `fleet.observed.gateway_config` reads the gateway config the same way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from io import StringIO
from typing import Any, NamedTuple, TypeVar

import yaml  # type: ignore[import-untyped]
from pydantic import BaseModel, ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError
from ruamel.yaml.resolver import implicit_resolvers

from fleet.spec.messages import describe_error
from fleet.spec.models import DesiredFleet, FleetSettings, Gateway, Host, Seat
from fleet.spec.problems import Problem, Severity

Loc = tuple[str | int, ...]
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class Spot:
    """Where a value sits: the 0-based line and column of its key (in a mapping) or of
    itself (in a sequence), whether it is a flow collection, and where its children are."""

    line: int
    column: int
    flow: bool = False
    keys: Mapping[Any, Spot] = field(default_factory=dict)
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


def _plain_tag_table() -> dict[str, list[tuple[str, Any]]]:
    """ruamel.yaml's YAML 1.2 implicit resolvers by first character, in its order."""
    table: dict[str, list[tuple[str, Any]]] = {}
    for versions, tag, regexp, first in implicit_resolvers:
        if (1, 2) in versions:
            for char in first:
                table.setdefault(char, []).append((tag.rsplit(":", 1)[-1], regexp))
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


def located(tree: Any) -> YamlDoc:
    """A ruamel.yaml round-trip tree as plain data and spots."""
    return YamlDoc(_plain(tree), _spot_of(tree, 0, 0))


def _spot_of(node: Any, line: int, column: int) -> Spot:
    if isinstance(node, CommentedMap):
        keys = {k: _spot_of(v, *_where(node, k, line)) for k, v in node.items()}
        return Spot(line, column, bool(node.fa.flow_style()), keys=keys)
    if isinstance(node, CommentedSeq):
        items = tuple(_spot_of(v, *_where(node, i, line)) for i, v in enumerate(node))
        return Spot(line, column, bool(node.fa.flow_style()), items=items)
    return Spot(line, column)


def _where(node: CommentedMap | CommentedSeq, key: Any, line: int) -> tuple[int, int]:
    data = node.lc.data  # None for a mapping merged in with `<<`
    found = data.get(key) if isinstance(data, dict) else None
    return (found[0], found[1]) if found else (line, 0)


@dataclass
class Sources:
    """Parsed files: plain data (for rules that walk it), texts, and where each key is."""

    prefix: str = "desired"
    trees: dict[str, Any] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    spots: dict[str, Spot] = field(default_factory=dict)

    def display(self, rel: str) -> str:
        """The path shown to users, e.g. desired/seats/sec.yaml."""
        return f"{self.prefix}/{rel}" if self.prefix else rel

    def line(self, rel: str, loc: Loc = ()) -> int | None:
        """1-based line of the deepest existing key along `loc` in file `rel`."""
        node = self.spots.get(rel)
        if node is None:
            return None
        line = 1
        for part in loc:
            child = node.child(part)
            if child is None:
                break
            line, node = child.line + 1, child
        return line

    def problem(self, rel: str, loc: Loc, message: str, *, warning: bool = False) -> Problem:
        """A problem located at `loc` of file `rel`."""
        severity = "warning" if warning else "error"
        return Problem.model_validate(
            {
                "path": self.display(rel),
                "line": self.line(rel, loc),
                "severity": severity,
                "message": message,
            }
        )


@dataclass
class LoadedFleet:
    """The result of loading: the fleet (None if it could not be built) and its problems."""

    fleet: DesiredFleet | None
    problems: list[Problem]
    sources: Sources


def load_fleet(files: Mapping[str, str], prefix: str = "desired") -> LoadedFleet:
    """Build the fleet from desired/ file texts keyed by relative path."""
    sources = Sources(prefix=prefix)
    problems: list[Problem] = []
    for rel, text in sorted(files.items()):
        sources.texts[rel] = text
        doc = _parse_yaml(rel, text, sources, problems)
        if doc is not None:
            sources.trees[rel], sources.spots[rel] = doc
    parts = _build_parts(sources, problems)
    if any(p.severity is Severity.ERROR for p in problems):
        return LoadedFleet(None, problems, sources)
    return LoadedFleet(DesiredFleet(**parts), problems, sources)


def _parse_yaml(rel: str, text: str, sources: Sources, problems: list[Problem]) -> YamlDoc | None:
    try:
        doc = read_yaml(text) or located(YAML(typ="rt").load(StringIO(text)))
    except MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark else None
        reason = err.problem or err.context or "invalid YAML"
        problems.append(
            Problem(path=sources.display(rel), line=line, message=f"YAML syntax error: {reason}")
        )
        return None
    if not isinstance(doc.data, dict):
        message = "expected a mapping of keys to values at the top level"
        problems.append(Problem(path=sources.display(rel), line=1, message=message))
        return None
    return doc


def _build_parts(sources: Sources, problems: list[Problem]) -> dict[str, Any]:
    parts: dict[str, Any] = {"hosts": {}, "seats": {}}
    for rel, tree in sorted(sources.trees.items()):
        kind, stem = _classify(rel)
        if kind == "fleet":
            parts["settings"] = _build(FleetSettings, rel, tree, sources, problems)
        elif kind == "gateway":
            parts["gateway"] = _build(Gateway, rel, tree, sources, problems)
        elif kind in ("host", "seat"):
            model: type[Host] | type[Seat] = Host if kind == "host" else Seat
            data = _named(rel, stem, dict(tree), sources, problems, kind)
            built = _build(model, rel, data, sources, problems)
            if built is not None:
                parts[f"{kind}s"][stem] = built
        else:
            problems.append(
                sources.problem(
                    rel,
                    (),
                    "ignored: not fleet.yaml, gateway.yaml, hosts/<name>.yaml or seats/<name>.yaml",
                    warning=True,
                )
            )
    return {k: v for k, v in parts.items() if v is not None}


def _classify(rel: str) -> tuple[str, str]:
    parts = rel.split("/")
    stem = parts[-1].rsplit(".", 1)[0]
    if len(parts) == 1 and stem in ("fleet", "gateway"):
        return stem, stem
    if len(parts) == 2 and parts[0] in ("hosts", "seats"):
        return parts[0][:-1], stem
    return "unknown", stem


def _named(
    rel: str, stem: str, data: dict[str, Any], sources: Sources, problems: list[Problem], kind: str
) -> dict[str, Any]:
    name = data.setdefault("name", stem)
    if name != stem:
        problems.append(
            sources.problem(
                rel, ("name",), f"{kind} name {name!r} must equal the file name {stem!r}"
            )
        )
        data["name"] = stem
    return data


def _build(
    model: type[M], rel: str, data: dict[str, Any], sources: Sources, problems: list[Problem]
) -> M | None:
    try:
        return model.model_validate(data)
    except ValidationError as err:
        for error in err.errors():
            loc = tuple(error["loc"])
            problems.append(sources.problem(rel, loc, describe_error(error, model)))
        return None


def _plain(node: Any) -> Any:
    """ruamel round-trip nodes as plain dicts, lists and scalars."""
    if isinstance(node, dict):
        return {str(k): _plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v) for v in node]
    return node
