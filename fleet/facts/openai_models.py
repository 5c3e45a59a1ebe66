"""The model ids an OpenAI-compatible `/v1/models` answer lists (vLLM, llama-server, LiteLLM).

Called by observe (gateway backends), the health gate (does the engine serve its name)
and gateway verification (does the proxy list an alias). Total: any JSON, or none.
"""

from __future__ import annotations

import json
from typing import Any


def model_ids(payload: Any) -> tuple[str, ...] | None:
    """`{"data": [{"id": ...}, ...]}` -> the ids in order; None when it is no model list."""
    if isinstance(payload, str | bytes):
        try:
            payload = json.loads(payload)
        except (ValueError, RecursionError):
            return None
    if not isinstance(payload, dict) or not isinstance(payload.get("data", []), list):
        return None
    return tuple(
        str(item["id"])
        for item in payload.get("data", [])
        if isinstance(item, dict) and "id" in item
    )
