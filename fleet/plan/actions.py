"""The words of a plan: action kinds, actions, no-ops and blockers (pure data).

Shared by `fleet.plan`, `fleet.gateway_plan`, the renderers and apply.
"""

from __future__ import annotations

from enum import StrEnum

from fleet.base import CoreModel
from fleet.plan.diff import FieldChange


class ActionKind(StrEnum):
    """What an action does."""

    CREATE_SEAT = "create-seat"
    REPLACE_SEAT = "replace-seat"
    REMOVE_SEAT = "remove-seat"
    ADD_ALIAS = "add-alias"
    RETARGET_ALIAS = "retarget-alias"
    REMOVE_ALIAS = "remove-alias"
    RESTART_GATEWAY = "restart-gateway"


class Action(CoreModel):
    """One step of a plan."""

    kind: ActionKind
    target: str
    host: str
    wave: int
    reasons: tuple[str, ...] = ()
    changes: tuple[FieldChange, ...] = ()


class NoOp(CoreModel):
    """Something in sync, and why fleet thinks so."""

    target: str
    reason: str


class Blocker(CoreModel):
    """A reason the plan must not be applied."""

    target: str
    message: str
