"""Turn the text of desired/ files into a `DesiredFleet`, with every problem at file:line.

Called by the command line (through `reconciler.desired`, which reads the files) and by
tests. The input is a mapping of paths relative to desired/ (`seats/sec.yaml`) to text, so
this module does no I/O. YAML is read with ruamel.yaml's round-trip loader, whose nodes
remember their line numbers; those positions are kept in `Sources` for `validate`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from io import StringIO
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError

from fleet.spec.messages import describe_error
from fleet.spec.models import DesiredFleet, FleetSettings, Gateway, Host, Seat
from fleet.spec.problems import Problem, Severity

Loc = tuple[str | int, ...]
M = TypeVar("M", bound=BaseModel)


@dataclass
class Sources:
    """Parsed YAML trees per file, to find the line of any key."""

    prefix: str = "desired"
    trees: dict[str, Any] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)

    def display(self, rel: str) -> str:
        """The path shown to users, e.g. desired/seats/sec.yaml."""
        return f"{self.prefix}/{rel}" if self.prefix else rel

    def line(self, rel: str, loc: Loc = ()) -> int | None:
        """1-based line of the deepest existing key along `loc` in file `rel`."""
        node = self.trees.get(rel)
        line = 1 if node is not None else None
        for part in loc:
            found = _child_line(node, part)
            if found is None:
                break
            line, node = found
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


def _child_line(node: Any, part: str | int) -> tuple[int, Any] | None:
    if isinstance(node, CommentedMap) and part in node:
        return node.lc.key(part)[0] + 1, node[part]
    if isinstance(node, CommentedSeq) and isinstance(part, int) and part < len(node):
        return node.lc.item(part)[0] + 1, node[part]
    return None


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
        tree = _parse_yaml(rel, text, sources, problems)
        if tree is not None:
            sources.trees[rel] = tree
    parts = _build_parts(sources, problems)
    if any(p.severity is Severity.ERROR for p in problems):
        return LoadedFleet(None, problems, sources)
    return LoadedFleet(DesiredFleet(**parts), problems, sources)


def _parse_yaml(rel: str, text: str, sources: Sources, problems: list[Problem]) -> Any:
    yaml = YAML(typ="rt")
    try:
        tree = yaml.load(StringIO(text))
    except MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark else None
        reason = err.problem or err.context or "invalid YAML"
        problems.append(
            Problem(path=sources.display(rel), line=line, message=f"YAML syntax error: {reason}")
        )
        return None
    if not isinstance(tree, CommentedMap):
        problems.append(
            Problem(
                path=sources.display(rel),
                line=1,
                message="expected a mapping of keys to values at the top level",
            )
        )
        return None
    return tree


def _build_parts(sources: Sources, problems: list[Problem]) -> dict[str, Any]:
    parts: dict[str, Any] = {"hosts": {}, "seats": {}}
    for rel, tree in sorted(sources.trees.items()):
        kind, stem = _classify(rel)
        if kind == "fleet":
            parts["settings"] = _build(FleetSettings, rel, _plain(tree), sources, problems)
        elif kind == "gateway":
            parts["gateway"] = _build(Gateway, rel, _plain(tree), sources, problems)
        elif kind in ("host", "seat"):
            model: type[Host] | type[Seat] = Host if kind == "host" else Seat
            data = _named(rel, stem, _plain(tree), sources, problems, kind)
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
