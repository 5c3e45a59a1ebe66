"""Bounds on YAML that fleet reads from a host: size, nesting and what aliases expand to.

A gateway's config is a file on a host that fleet does not write alone: a few hundred
bytes of nested aliases (`&a [x, x, ...]`, `&b [*a, *a, ...]`, ...) expand to billions of
nodes once a tree is walked, and a thousand nested lists exhaust Python's recursion. Both
are refused here, on libyaml's event stream (flat, no tree built), before ruamel.yaml or
any walk sees the text. Called by `fleet.gateways.litellm.config.read_config`.
"""

from __future__ import annotations

import yaml  # type: ignore[import-untyped]

MAX_BYTES = 8 * 1024 * 1024  # a LiteLLM config of a few thousand entries is < 1 MiB
MAX_DEPTH = 64
MAX_NODES = 200_000  # scalars and collections once every alias is expanded

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def yaml_bounds_problem(
    text: str, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES
) -> str | None:
    """What makes this text too costly to read ('is 9000000 bytes, ...'), else None (and
    None for text that is not YAML: its parser says what is wrong with it)."""
    if len(text) > max_bytes:
        return f"is {len(text)} bytes, more than the {max_bytes} fleet reads"
    for loader in (_LOADER, yaml.SafeLoader):  # libyaml refuses deep nesting up front
        try:
            return _expansion_problem(yaml.parse(text, Loader=loader), max_depth, max_nodes)
        except yaml.YAMLError:
            continue
    return None


def _expansion_problem(events: object, max_depth: int, max_nodes: int) -> str | None:
    sizes: dict[str, int] = {}  # anchor -> nodes of its value, aliases expanded
    open_nodes: list[tuple[str | None, int]] = []  # (anchor, nodes so far) per collection
    total = 0
    for event in events:  # type: ignore[attr-defined]
        if isinstance(event, yaml.CollectionStartEvent):
            open_nodes.append((event.anchor, 1))
            if len(open_nodes) > max_depth:
                return f"nests deeper than {max_depth} levels"
            added = 1
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, count = open_nodes.pop()
            if anchor is not None:
                sizes[anchor] = count
            added = 0
            if open_nodes:
                parent, so_far = open_nodes[-1]
                open_nodes[-1] = (parent, so_far + count)
        elif isinstance(event, yaml.AliasEvent):
            if any(anchor == event.anchor for anchor, _ in open_nodes):
                return f"has an alias (*{event.anchor}) inside the node it names"
            added = sizes.get(event.anchor, 1)
            _count_in(open_nodes, added)
        elif isinstance(event, yaml.ScalarEvent):
            added = 1
            if event.anchor is not None:
                sizes[event.anchor] = 1
            _count_in(open_nodes, 1)
        else:
            continue
        total += added
        if total > max_nodes:
            return f"expands to more than {max_nodes} nodes (aliases of aliases)"
    return None


def _count_in(open_nodes: list[tuple[str | None, int]], added: int) -> None:
    if open_nodes:
        anchor, so_far = open_nodes[-1]
        open_nodes[-1] = (anchor, so_far + added)
