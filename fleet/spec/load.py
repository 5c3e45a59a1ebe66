"""Turn the text of desired/ files into a `DesiredFleet`, with every problem at file:line.

Called by the command line (through `reconciler.workflows.desired`, which reads the files) and by
tests. The input is a mapping of paths relative to desired/ (`seats/sec.yaml`) to text, so
this module does no I/O. Each file is parsed once: `fleet.yaml_reader` reads it with
libyaml by ruamel.yaml's YAML 1.2 rules; where it cannot promise ruamel's reading,
ruamel.yaml's round-trip loader reads it (`fleet.spec.ruamel_tree`, imported only then),
so values and error messages stay ruamel's. Either way each key and item keeps its `Spot`
(line, column) in `Sources` for `validate`. `fleet.observed.gateway_config` reads the
gateway config the same way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from fleet.spec.messages import describe_error
from fleet.spec.model_origin import error_loc
from fleet.spec.models import DesiredFleet, FleetSettings, Gateway, Host, Seat
from fleet.spec.problems import Problem, Severity
from fleet.yaml_bounds import check_bounds
from fleet.yaml_reader import Spot, YamlDoc, read_yaml

Loc = tuple[str | int, ...]
M = TypeVar("M", bound=BaseModel)


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
    bound = check_bounds(text)
    if bound is not None:
        problems.append(Problem(path=sources.display(rel), line=bound.line, message=bound.message))
        return None
    doc = read_yaml(text) or _read_round_trip(rel, text, sources, problems)
    if doc is None:
        return None
    if not isinstance(doc.data, dict):
        message = "expected a mapping of keys to values at the top level"
        problems.append(Problem(path=sources.display(rel), line=1, message=message))
        return None
    return doc


def _read_round_trip(
    rel: str, text: str, sources: Sources, problems: list[Problem]
) -> YamlDoc | None:
    """What only ruamel.yaml can read (or reject, with its message and line)."""
    from ruamel.yaml.constructor import DuplicateKeyError
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    from fleet.spec.ruamel_tree import load_round_trip

    line: int | None = None
    try:
        return load_round_trip(text)
    except DuplicateKeyError as err:  # its own words carry both values: a secret's too
        line = err.problem_mark.line + 1 if err.problem_mark else None
        key = _DUPLICATE_KEY.search(err.problem or "")
        reason = f"key {key.group(1) if key else ''!r} is given twice"
    except MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark else None
        reason = err.problem or err.context or "invalid YAML"
    except YAMLError as err:
        reason = str(err).splitlines()[0] if str(err) else "invalid YAML"
    problems.append(
        Problem(path=sources.display(rel), line=line, message=f"YAML syntax error: {reason}")
    )
    return None


_DUPLICATE_KEY = re.compile(r'found duplicate key "(.{0,80}?)" with value')


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
            loc, message = error_loc(tuple(error["loc"]), describe_error(error, model))
            problems.append(sources.problem(rel, loc, message))
        return None
