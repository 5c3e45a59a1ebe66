"""JSON Schema of the desired/ files, generated from the spec models for `fleet schema`.

Editors (via yaml-language-server) and CI use it to catch typos before fleet runs.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from fleet.errors import FleetError
from fleet.models import FleetSettings, Gateway, Host, Seat

KINDS: dict[str, tuple[str, type[BaseModel]]] = {
    "fleet": ("fleet.yaml", FleetSettings),
    "host": ("hosts/<name>.yaml", Host),
    "seat": ("seats/<name>.yaml", Seat),
    "gateway": ("gateway.yaml", Gateway),
}


def fleet_schema(kind: str = "all") -> dict[str, Any]:
    """One kind's schema, or all of them keyed by the file they describe."""
    if kind == "all":
        return {path: model.model_json_schema() for path, model in KINDS.values()}
    if kind not in KINDS:
        raise FleetError(f"unknown schema kind {kind!r}: use {', '.join(KINDS)} or all")
    return KINDS[kind][1].model_json_schema()
