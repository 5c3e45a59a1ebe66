"""One YAML emitter for everything fleet writes, so outputs are stable and diff cleanly."""

from __future__ import annotations

from io import StringIO
from typing import Any

from ruamel.yaml import YAML


def make_yaml() -> YAML:
    """A round-trip YAML instance with fleet's formatting: 2-space indents, no wrapping."""
    yaml = YAML(typ="rt")
    yaml.indent(mapping=2, sequence=4, offset=2)
    yaml.width = 4096
    yaml.preserve_quotes = True
    return yaml


def dump_yaml(data: Any, header: str = "") -> str:
    """YAML text of `data`, after an optional comment header."""
    stream = StringIO()
    make_yaml().dump(data, stream)
    return header + stream.getvalue()


def load_yaml(text: str) -> Any:
    """Round-trip load (comments and order kept)."""
    return make_yaml().load(StringIO(text))
