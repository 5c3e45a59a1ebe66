"""JSON Schema of the desired/ files, generated from the spec models for `fleet schema`.

Editors (via yaml-language-server) and CI use it to catch typos before fleet runs.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

import fleet.gateways  # registers the built-in kinds' keys of gateway.yaml
import fleet.runtimes  # noqa: F401 - registers the built-in runtimes' keys of a host file
from fleet.errors import FleetError
from fleet.spec.models import FleetSettings, Gateway, Host, Seat

DESIRED: dict[str, tuple[str, type[BaseModel]]] = {
    "fleet": ("fleet.yaml", FleetSettings),
    "host": ("hosts/<name>.yaml", Host),
    "seat": ("seats/<name>.yaml", Seat),
    "gateway": ("gateway.yaml", Gateway),
}
DOCUMENTS = {
    "plan": "fleet plan --json",
    "inventory": "fleet inventory --json",
    "status": "fleet status --json",
}
KINDS = (*DESIRED, *DOCUMENTS)


def _document_model(kind: str) -> type[BaseModel]:
    """The plan, inventory and status models, imported only when asked for (they pull the
    planner)."""
    if kind == "plan":
        from fleet.plan.plan import Plan

        return Plan
    if kind == "status":
        from fleet.report.status import FleetStatus

        return FleetStatus
    from fleet.report.inventory import Inventory

    return Inventory


def fleet_schema(kind: str = "all") -> dict[str, Any]:
    """One kind's schema, or every desired/ file's keyed by the file it describes."""
    if kind == "all":
        return {path: model.model_json_schema() for path, model in DESIRED.values()}
    if kind in DESIRED:
        return DESIRED[kind][1].model_json_schema()
    if kind in DOCUMENTS:
        return _document_model(kind).model_json_schema()
    raise FleetError(f"unknown schema kind {kind!r}: use {', '.join(KINDS)} or all")
