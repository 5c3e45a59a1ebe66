"""Read a LiteLLM proxy config: its aliases, their backends, and which fleet manages.

A parser (text of the config file in, the neutral `fleet.observed.gateway_config` models
out) that observation, plan and the splicer reach through the LiteLLM gateway kind. An
entry is a `model_list` item (`model_name`, `litellm_params`); fleet marks the entries it
manages with a `model_info.id` of the form `fleet:<seat>:<alias>`; every other entry is
foreign and never touched.
`read_config` parses a text once (libyaml where it can promise ruamel.yaml's reading,
ruamel.yaml elsewhere) and keeps the last few documents by their exact text, so that
observe, plan and the renderer's edits and check share one parse of the same config.
"""

from __future__ import annotations

import warnings
from functools import lru_cache
from io import StringIO
from typing import Any

from fleet.errors import GatewayError
from fleet.names import entry_seat
from fleet.observed.gateway_config import GatewayConfig, GatewayEntry
from fleet.yaml_bounds import yaml_bounds_problem
from fleet.yaml_reader import YamlDoc, plain, read_yaml


def load_tree(text: str) -> Any:
    """Round-trip YAML tree of a config; GatewayError on bad YAML or a non-mapping."""
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap
    from ruamel.yaml.error import MarkedYAMLError, ReusedAnchorWarning, YAMLError

    try:
        with warnings.catch_warnings():  # an anchor named twice: YAML allows it, ruamel warns
            warnings.simplefilter("ignore", ReusedAnchorWarning)
            tree = YAML(typ="rt").load(StringIO(text))
    except MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f" at line {mark.line + 1}" if mark else ""
        raise GatewayError(
            f"gateway config is not valid YAML{where}: {err.problem or err.context}"
        ) from err
    except YAMLError as err:
        raise GatewayError(f"gateway config is not valid YAML: {err}") from err
    if tree is None:
        return CommentedMap()
    if not isinstance(tree, CommentedMap):
        raise GatewayError("gateway config must be a mapping at the top level")
    return tree


@lru_cache(maxsize=4)
def read_config(text: str) -> YamlDoc:
    """The config's plain data and spots, parsed once per text (the cache is keyed by the
    exact text; the document is shared, so read it and never change it).

    libyaml reads it where it can promise ruamel.yaml's reading, ruamel.yaml (`load_tree`)
    elsewhere; GatewayError on bad YAML or a non-mapping, with ruamel's message, and on
    a text too costly to read (size, nesting, aliases: `fleet.yaml_bounds`).
    """
    if (problem := yaml_bounds_problem(text)) is not None:
        raise GatewayError(f"gateway config {problem}")
    doc = read_yaml(text)
    if doc is None:
        from fleet.spec.ruamel_tree import located

        return located(load_tree(text))
    if doc.data is None:
        return YamlDoc({}, doc.spot)
    if not isinstance(doc.data, dict):
        raise GatewayError("gateway config must be a mapping at the top level")
    return doc


def parse_gateway_config(text: str) -> GatewayConfig:
    """Entries and fallbacks of a LiteLLM config text."""
    return config_of(read_config(text))


def config_of(doc: YamlDoc) -> GatewayConfig:
    """Entries and fallbacks of a parsed config (`read_config`)."""
    models = doc.data.get("model_list") or []
    spot = doc.spot.child("model_list")
    entries = (
        [
            entry_of(item, spot.items[i].line + 1)
            for i, item in enumerate(models)
            if isinstance(item, dict) and "model_name" in item
        ]
        if isinstance(models, list) and spot is not None
        else []
    )
    return GatewayConfig(entries=tuple(entries), fallbacks=_fallbacks(doc.data))


def entry_of(item: dict[str, Any], line: int | None = None) -> GatewayEntry:
    """The neutral entry of one `model_list` item."""
    raw = item.get("litellm_params") or {}
    if not isinstance(raw, dict):
        what = type(raw).__name__
        raise GatewayError(
            f"gateway config line {line}: litellm_params is not a mapping (got {what})"
        )
    params = dict(raw)
    info = item.get("model_info") or {}
    info = info if isinstance(info, dict) else {}
    return GatewayEntry(
        alias=str(item["model_name"]),
        seat=entry_seat(_text(info.get("id"))),
        address=_text(params.pop("api_base", None) or item.get("api_base")),
        model=_text(params.pop("model", None)),
        context=_context(plain({k: v for k, v in info.items() if k != "id"})),
        params=plain(params),
        line=line,
    )


def _context(info: dict[str, Any]) -> int | None:
    """The context a `model_info` states as fleet writes it (`max_input_tokens` and
    `max_tokens` alike, nothing else); None otherwise, so that it is rewritten."""
    context = info.get("max_input_tokens")
    if isinstance(context, int) and info == {"max_input_tokens": context, "max_tokens": context}:
        return context
    return None


def _fallbacks(tree: Any) -> dict[str, tuple[str, ...]]:
    found: dict[str, tuple[str, ...]] = {}
    for section in ("router_settings", "litellm_settings"):
        block = tree.get(section)
        items = block.get("fallbacks") if isinstance(block, dict) else None
        if not isinstance(items or [], list):
            raise GatewayError(f"gateway config: {section}.fallbacks is not a list")
        for item in items or []:
            if isinstance(item, dict):
                for alias, targets in item.items():
                    found[str(alias)] = _targets(section, alias, targets)
    return found


def _targets(section: str, alias: Any, targets: Any) -> tuple[str, ...]:
    if not isinstance(targets or [], list):
        raise GatewayError(
            f"gateway config: {section}.fallbacks of {alias} is not a list of aliases"
            f" (got {type(targets).__name__})"
        )
    return tuple(str(t) for t in (targets or []))


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
