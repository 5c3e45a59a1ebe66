"""Edit a LiteLLM config so that fleet's aliases match desired/, touching nothing else.

Reached through the LiteLLM gateway kind (`fleet render gateway`, plan and apply). The
edit is a splice of text lines, not a re-dump: the parsed config
(`fleet.gateways.litellm.config.read_config`, one parse per text) tells where
each `model_list` item and fallback item starts and ends, fleet replaces only its own
items (`model_info.id: fleet:<seat>:<alias>`; `model_info` also carries the seat's context
as `max_input_tokens` and `max_tokens`, which LiteLLM does not learn from the engine and
clients otherwise guess), adopts a hand-written item for an alias
desired/ now declares, deletes retired aliases, and appends new items. Every other byte
(comments, order, foreign entries, quoting) stays as it was.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fleet.errors import GatewayError
from fleet.gateways.litellm.config import config_of, read_config
from fleet.gateways.litellm.settings import LiteLLMSettings
from fleet.names import CUSTOM_AUTH, entry_id, is_managed_entry
from fleet.observed.gateway_config import GatewayConfig
from fleet.spec.models import DesiredFleet, Gateway
from fleet.yaml_reader import Spot, YamlDoc
from fleet.yamltext import dump_yaml

Decide = Callable[[Any], str | None]  # item -> replacement key, "" to delete, None to keep


def desired_entries(
    desired: DesiredFleet, only: frozenset[str] = frozenset()
) -> dict[str, dict[str, Any]]:
    """alias -> the model_list item fleet wants, for every alias (of `only` seats, if any)."""
    gateway = desired.gateway
    settings = settings_of(gateway)
    prefix = settings.provider_prefix
    entries: dict[str, dict[str, Any]] = {}
    for seat in sorted(desired.seats.values(), key=lambda s: s.name):
        if only and seat.name not in only:
            continue
        host = desired.hosts[seat.host]
        for alias in seat.aliases:
            params: dict[str, Any] = {
                "model": f"{prefix}{seat.served_name}",
                "api_base": f"http://{host.address}:{seat.port}/v1",
            }
            params.update(sorted((settings.alias_params.get(alias) or {}).items()))
            entries[alias] = {
                "model_name": alias,
                "litellm_params": params,
                "model_info": {
                    "id": entry_id(seat.name, alias),
                    "max_input_tokens": seat.context,
                    "max_tokens": seat.context,
                },
            }
    return dict(sorted(entries.items()))


def settings_of(gateway: Gateway | None) -> LiteLLMSettings:
    """A LiteLLM gateway's own settings (the defaults without a gateway)."""
    if gateway is not None and isinstance(gateway.settings, LiteLLMSettings):
        return gateway.settings
    return LiteLLMSettings()


def routes_as_wanted(item: dict[str, Any], wanted: dict[str, Any]) -> bool:
    """True when a hand-written entry routes exactly as fleet would write it (its params
    included), so it is adopted as it stands instead of rewritten."""
    return bool(item.get("litellm_params") == wanted["litellm_params"])


def same(written: Any, wanted: Any) -> bool:
    """The same value, type for type (1 and 1.0 and True are different values to a YAML
    reader, though Python compares them equal); the order of a mapping's keys aside."""
    if type(written) is not type(wanted):
        return False
    if isinstance(wanted, dict):
        return written.keys() == wanted.keys() and all(
            same(written[k], v) for k, v in wanted.items()
        )
    if isinstance(wanted, list):
        return len(written) == len(wanted) and all(map(same, written, wanted))
    return bool(written == wanted)


def render_gateway_config(
    text: str, desired: DesiredFleet, only: frozenset[str] = frozenset()
) -> str:
    """The config text with fleet's entries and fallbacks as desired/ says.

    With `only` (seat names, from `--seat`), just those seats' aliases are written; every
    other entry, retirement and fallback is left as it is.
    """
    gateway = desired.gateway
    retired = set(gateway.retired_aliases) if gateway and not only else set()
    wanted = desired_entries(desired, only)
    fallbacks = {a: list(t) for a, t in sorted((gateway.fallbacks if gateway else {}).items())}
    edited = _splice_models(text, read_config(text), wanted, retired, only)
    if not only:
        edited = _splice_fallbacks(edited, read_config(edited), fallbacks, set(wanted) | retired)
    if gateway is not None and gateway.clients:
        edited = splice_custom_auth(edited, read_config(edited))
    if edited != text:  # unchanged, every wanted alias already routed as desired: no check
        _check(config_of(read_config(edited)), wanted, retired)
    return edited


def _splice_models(
    text: str,
    doc: YamlDoc,
    wanted: dict[str, dict[str, Any]],
    retired: set[str],
    only: frozenset[str],
) -> str:
    pending = dict(wanted)

    def decide(item: Any) -> str | None:
        if not isinstance(item, dict) or "model_name" not in item:
            return None
        alias = str(item["model_name"])
        info = item.get("model_info")
        known = str(info.get("id", "")) if isinstance(info, dict) else ""
        managed = is_managed_entry(known)
        if only and alias not in wanted and not (managed and known.split(":")[1] in only):
            return None  # another seat's entry: --seat leaves it alone
        if alias in pending and not managed and routes_as_wanted(item, wanted[alias]):
            del pending[alias]  # a hand-written entry that already routes as desired: adopted
            return None
        if alias in pending and managed and same(item, wanted[alias]):
            del pending[alias]  # fleet's entry as fleet writes it: its lines stay
            return None
        if alias in pending:
            return alias
        if (managed and alias not in wanted) or alias in retired or alias in wanted:
            return ""  # a stale managed entry, a retired alias, or a duplicate
        return None

    return _splice(text, doc, ("model_list",), decide, pending, lambda a: wanted[a])


def _splice_fallbacks(
    text: str, doc: YamlDoc, wanted: dict[str, list[str]], owned: set[str]
) -> str:
    tree = doc.data
    section = next(
        (
            s
            for s in ("router_settings", "litellm_settings")
            if isinstance(tree.get(s), dict) and "fallbacks" in tree[s]
        ),
        None,
    )
    if section is None and not wanted:
        return text
    pending = dict(wanted)

    def decide(item: Any) -> str | None:
        if not isinstance(item, dict) or len(item) != 1:
            return None
        alias = str(next(iter(item)))
        if alias in pending:
            return alias
        return "" if alias in owned else None

    path = (section or "router_settings", "fallbacks")
    return _splice(text, doc, path, decide, pending, lambda a: {a: wanted[a]})


def _splice(
    text: str,
    doc: YamlDoc,
    path: tuple[str, ...],
    decide: Decide,
    pending: dict[str, Any],
    render: Callable[[str], Any],
) -> str:
    """Replace, delete or append items of the block sequence at `path` of `doc` (`text`)."""
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    found = _find_seq(doc, path)
    if found is None:
        return _insert_block(lines, doc, path, [render(k) for k in pending]) if pending else text
    seq, spot = found
    spans = _item_spans(lines, spot, _block_end(lines, spot))
    out: list[str] = []
    cursor = 0
    for item, (start, stop, column) in zip(seq, spans, strict=True):
        out += lines[cursor:start]
        key = decide(item)
        if key is None:
            out += lines[start:stop]
        elif key:
            out += _item_text(render(key), column)
            pending.pop(key)
        cursor = stop
    out += lines[cursor : spans[-1][1]]
    for key in list(pending):
        out += _item_text(render(key), spans[-1][2])
        del pending[key]
    return "".join(out + lines[spans[-1][1] :])


def splice_custom_auth(text: str, doc: YamlDoc) -> str:
    """The config with `general_settings.custom_auth` naming fleet's key check (added
    under an existing general_settings, or the block appended); GatewayError when it
    names another module, which fleet's would replace."""
    settings = doc.data.get("general_settings")
    where = doc.spot.child("general_settings")
    line = f"custom_auth: {CUSTOM_AUTH}\n"
    if settings is None and "general_settings" not in doc.data:
        return (
            text
            + ("" if text.endswith("\n") or not text else "\n")
            + "general_settings:\n  "
            + line
        )
    if not isinstance(settings, dict) or not settings or where is None or where.flow:
        raise GatewayError(
            "gateway config: general_settings must be a block mapping for fleet to add "
            "its key check (custom_auth)"
        )
    if "custom_auth" in settings:
        if settings["custom_auth"] == CUSTOM_AUTH:
            return text
        raise GatewayError(
            "gateway config: general_settings.custom_auth names "
            f"{str(settings['custom_auth'])[:80]!r}; fleet's clients need fleet's key check "
            "there: remove it, or the clients"
        )
    lines = text.splitlines(keepends=True)
    column = next(iter(where.keys.values())).column
    at = where.line + 1
    return "".join([*lines[:at], " " * column + line, *lines[at:]])


def _find_seq(doc: YamlDoc, path: tuple[str, ...]) -> tuple[list[Any], Spot] | None:
    """The block sequence at `path` and its spot, None when the key is absent."""
    node: Any = doc.data
    spot: Spot | None = doc.spot
    for key in path:
        if not isinstance(node, dict) or spot is None:
            return None
        node, spot = node.get(key), spot.child(key)
    if node is None or spot is None:
        return None
    if not isinstance(node, list) or not node or spot.flow:
        raise GatewayError(
            f"gateway config: {'.'.join(path)} must be a non-empty block "
            "list for fleet to edit it in place"
        )
    return node, spot


def _insert_block(lines: list[str], doc: YamlDoc, path: tuple[str, ...], items: list[Any]) -> str:
    """Add the missing key at `path` (and its parent if needed) holding `items`."""
    parent = doc.data.get(path[0]) if len(path) > 1 else None
    where = doc.spot.child(path[0])
    if len(path) > 1 and isinstance(parent, dict) and parent and where is not None:
        column = next(iter(where.keys.values())).column
        at = where.line + 1
        block = [f"{' ' * column}{path[-1]}:\n"]
        block += [t for item in items for t in _item_text(item, column + 2)]
        return "".join(lines[:at] + block + lines[at:])
    if len(path) > 1 and path[0] in doc.data:
        raise GatewayError(f"gateway config: {path[0]} must be a mapping")
    block = [f"{' ' * (2 * depth)}{key}:\n" for depth, key in enumerate(path)]
    block += [t for item in items for t in _item_text(item, 2 * (len(path) - 1))]
    return "".join(lines + block)


def _block_end(lines: list[str], seq: Spot) -> int:
    """First line after the sequence: the next line indented at or left of its dashes."""
    first = seq.items[0].line
    dash = len(lines[first]) - len(lines[first].lstrip(" "))
    for index in range(first + 1, len(lines)):
        stripped = lines[index].strip()
        if not stripped or stripped.startswith("#"):
            continue
        indent = len(lines[index]) - len(lines[index].lstrip(" "))
        if indent < dash or (indent == dash and not stripped.startswith("-")):
            return _trim(lines, first, index)
    return _trim(lines, first, len(lines))


def _item_spans(lines: list[str], seq: Spot, end: int) -> list[tuple[int, int, int]]:
    starts = [item.line for item in seq.items]
    spans = []
    for i, start in enumerate(starts):
        stop = starts[i + 1] if i + 1 < len(starts) else end
        column = len(lines[start]) - len(lines[start].lstrip(" "))
        spans.append((start, _trim(lines, start, stop), column))
    return spans


def _trim(lines: list[str], start: int, stop: int) -> int:
    """Move `stop` up past blank and comment lines that trail an item."""
    while stop > start + 1 and (
        not lines[stop - 1].strip() or lines[stop - 1].lstrip().startswith("#")
    ):
        stop -= 1
    return stop


def _item_text(value: Any, column: int) -> list[str]:
    body = dump_yaml(value).splitlines()
    pad = " " * column
    return [f"{pad}- {body[0]}\n"] + [f"{pad}  {line}\n" for line in body[1:]]


def _check(config: GatewayConfig, wanted: dict[str, dict[str, Any]], retired: set[str]) -> None:
    """The edited config routes every alias as desired."""
    routed = config.by_alias()
    for alias, item in wanted.items():
        entry = routed.get(alias)
        if entry is None or entry.address != item["litellm_params"]["api_base"]:
            raise GatewayError(f"gateway config edit lost alias {alias!r}")
    if retired & set(routed):
        raise GatewayError("gateway config edit kept a retired alias")
