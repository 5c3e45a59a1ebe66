"""JSON Schema of the desired/ files, generated from the spec models for `fleet schema`.

Editors (via yaml-language-server) and CI use it to catch typos before fleet runs.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from fleet.errors import FleetError
from fleet.plan.plan import Plan
from fleet.report.inventory import Inventory
from fleet.spec.models import FleetSettings, Gateway, Host, Seat

KINDS: dict[str, tuple[str, type[BaseModel]]] = {
    "fleet": ("fleet.yaml", FleetSettings),
    "host": ("hosts/<name>.yaml", Host),
    "seat": ("seats/<name>.yaml", Seat),
    "gateway": ("gateway.yaml", Gateway),
    "plan": ("fleet plan --json", Plan),
    "inventory": ("fleet inventory --json", Inventory),
}


def fleet_schema(kind: str = "all") -> dict[str, Any]:
    """One kind's schema, or every desired/ file's keyed by the file it describes."""
    if kind == "all":
        return {
            path: model.model_json_schema()
            for name, (path, model) in KINDS.items()
            if name not in ("plan", "inventory")
        }
    if kind not in KINDS:
        raise FleetError(f"unknown schema kind {kind!r}: use {', '.join(KINDS)} or all")
    return KINDS[kind][1].model_json_schema()
