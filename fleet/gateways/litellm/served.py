"""What a running LiteLLM proxy has loaded: its `/model/info` answer, alias -> api_base.

Called through the gateway kind (`fleet.gateways.GatewayKind.served_routes`) by observe,
which asks the proxy through the front and on each proxy port: the config file is an
intention, this is the fact. Total: any JSON, or none.
"""

from __future__ import annotations

import json
from typing import Any


def served_routes(payload: Any) -> dict[str, str | None] | None:
    """`{"data": [{"model_name": A, "litellm_params": {"api_base": B}}]}` -> {A: B} (the
    first entry per alias, as LiteLLM's router lists them); None when it is not that."""
    if isinstance(payload, str | bytes):
        try:
            payload = json.loads(payload)
        except (ValueError, RecursionError):
            return None
    if not isinstance(payload, dict) or not isinstance(payload.get("data"), list):
        return None
    found: dict[str, str | None] = {}
    for item in payload["data"]:
        if not isinstance(item, dict) or not isinstance(item.get("model_name"), str):
            continue
        params = item.get("litellm_params")
        base = params.get("api_base") if isinstance(params, dict) else None
        found.setdefault(item["model_name"], base if isinstance(base, str) else None)
    return found
