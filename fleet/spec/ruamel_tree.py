"""ruamel.yaml round-trip trees as the fast reader's `YamlDoc`: plain data and spots.

Imported only where ruamel.yaml reads a text: the files `fleet.yaml_reader` cannot
promise to read as ruamel.yaml does, and the gateway config that apply edits in place.
"""

from __future__ import annotations

from io import StringIO
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from fleet.yaml_reader import Spot, YamlDoc, plain


def load_round_trip(text: str) -> YamlDoc:
    """Read a text with ruamel.yaml's round-trip loader (its errors propagate)."""
    return located(YAML(typ="rt").load(StringIO(text)))


def located(tree: Any) -> YamlDoc:
    """A ruamel.yaml round-trip tree as plain data and spots."""
    return YamlDoc(plain(tree), _spot_of(tree, 0, 0))


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
