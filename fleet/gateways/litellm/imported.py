"""The gateway of an imported fleet: gateway.yaml from the LiteLLM config as it is.

Called by `fleet.render.desired_files` through the LiteLLM gateway kind. An entry whose
`api_base` is an imported seat's address and port (`where`) becomes one of that seat's
aliases; its extra `litellm_params` become `alias_params` (a literal key is replaced by an
`os.environ/` reference); the provider prefix is the one those entries use. Every other
entry stays foreign: fleet never touches it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import TYPE_CHECKING, Any

from fleet.errors import FleetError
from fleet.gateways.litellm.config import parse_gateway_config
from fleet.observed.gateway_config import GatewayEntry
from fleet.secrets import SECRET_KEY_NAMES

if TYPE_CHECKING:  # for annotations only: `fleet validate` observes nothing
    from fleet.observed.models import Observation

ROUTED = ("model", "api_base")


def gateway_file(
    gateway: tuple[str, str, str | None],
    address: str,
    where: dict[tuple[str, int], str],
    observation: Observation,
) -> tuple[str, dict[str, tuple[str, ...]]]:
    """gateway.yaml's text and, per seat name, the aliases routing to it. `gateway` is
    (host, config path, config text), `address` the host's, `where` (address, port) -> the
    imported seat that answers there."""
    host, path, text = gateway
    entries: tuple[GatewayEntry, ...] = ()
    if text is not None:
        try:
            entries = parse_gateway_config(text).entries
        except FleetError:
            entries = ()
    routed: dict[str, list[GatewayEntry]] = {}
    for entry in entries:
        found = _host_port(entry.address)
        seat = where.get(found) if found else None
        if seat is not None:
            routed.setdefault(seat, []).append(entry)
    mine = [e for group in routed.values() for e in group]
    out = "# Imported by `fleet import` from the LiteLLM config as it is. Review, then commit.\n"
    out += f"host: {json.dumps(host)}  # --gateway\nconfig_path: {json.dumps(path)}  # --gateway\n"
    out += f"url: {json.dumps(f'http://{address}:4000')}  # LiteLLM's default port: check it\n"
    out += "master_key: ${LITELLM_MASTER_KEY}  # from the environment, never stored\n"
    out += f"restart: {{container: {json.dumps(_proxy_container(observation, host))}}}"
    out += "  # the container that runs the proxy: check it\n"
    out += f"provider_prefix: {json.dumps(_prefix(mine))}  # what most routed entries use\n"
    prefix = _prefix(mine)
    for entry in mine:
        if entry.model and not entry.model.startswith(prefix):
            out += f"# import could not express: alias {entry.alias} routes as {entry.model}; "
            out += f"fleet will route it with {prefix}\n"
    params = {e.alias: _params(e) for e in mine if _params(e)}
    if params:
        out += f"alias_params: {json.dumps(params, sort_keys=True)}  # their other params\n"
    aliases = {seat: tuple(e.alias for e in group) for seat, group in routed.items()}
    return out, aliases


def _host_port(api_base: str | None) -> tuple[str, int] | None:
    match = re.match(r"https?://([^/:]+):(\d+)", api_base or "")
    return (match.group(1), int(match.group(2))) if match else None


def _prefix(entries: list[GatewayEntry]) -> str:
    prefixes = Counter(
        e.model.split("/", 1)[0] + "/" for e in entries if e.model and "/" in e.model
    )
    return prefixes.most_common(1)[0][0] if prefixes else "hosted_vllm/"


def _params(entry: GatewayEntry) -> dict[str, Any]:
    extra = {k: v for k, v in entry.params.items() if k not in ROUTED}
    return {
        k: f"os.environ/{entry.alias.upper().replace('-', '_')}_{k.upper()}"
        if SECRET_KEY_NAMES.search(k) and not str(v).startswith("os.environ/")
        else v
        for k, v in extra.items()
    }


def _proxy_container(observation: Observation, host: str) -> str:
    seats = observation.hosts[host].seats if host in observation.hosts else ()
    names = [s.instance.name for s in seats if "litellm" in s.instance.image.lower()]
    return names[0] if names else "litellm"
