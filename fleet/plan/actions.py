"""The words of a plan: action kinds and their waves, actions, no-ops and blockers (data).

Shared by `fleet.plan.plan`, `fleet.plan.aliases`, the reports and apply. An action's
wave follows from its kind (`WAVE_OF`): model fetches first, then seats, host by host,
then the gateway once its seats are healthy, then removals, then clients' keys, then
Prometheus's targets (the ports surges left, the seats removals took away);
`Action.sort_key` is the one order of a plan.
"""

from __future__ import annotations

from enum import IntEnum, StrEnum
from typing import Any

from pydantic import Field, model_validator

from fleet.base import CoreModel
from fleet.plan.diff import FieldChange
from fleet.plan.handoff import Handoff
from fleet.plan.predict import Prediction
from fleet.plan.strategy import Downtime, Strategy


class ActionKind(StrEnum):
    """What an action does."""

    FETCH_MODEL = "fetch-model"
    CREATE_SEAT = "create-seat"
    REPLACE_SEAT = "replace-seat"
    REMOVE_SEAT = "remove-seat"
    REMOVE_COPY = "remove-copy"  # a seat's copy that is not live (an interrupted surge's)
    ADD_ALIAS = "add-alias"
    RETARGET_ALIAS = "retarget-alias"
    REMOVE_ALIAS = "remove-alias"
    RESTART_GATEWAY = "restart-gateway"
    ADD_CLIENT = "add-client"  # a key issued, delivered, its hash added at the gateway
    UPDATE_CLIENT = "update-client"  # its aliases or limits at the gateway, same key
    REKEY_CLIENT = "rekey-client"  # a new key: rotation due, or the delivered one drifted
    REVOKE_CLIENT = "revoke-client"  # its hashes leave the gateway: refused at once
    WRITE_TARGETS = "write-targets"  # Prometheus's target files on the monitoring host


class Wave(IntEnum):
    """When an action runs: every action of a wave before any of the next."""

    MODELS = 0
    SEATS = 1
    GATEWAY = 2
    REMOVALS = 3
    CLIENTS = 4  # keys are verified through the front once every alias serves as desired
    MONITORING = 5  # target files follow the ports the seats were left on

    @property
    def title(self) -> str:
        """How reports head the wave."""
        return {
            0: "models",
            1: "seats",
            2: "gateway",
            3: "removals",
            4: "clients",
            5: "monitoring",
        }[self.value]


WAVE_OF: dict[ActionKind, Wave] = {
    ActionKind.FETCH_MODEL: Wave.MODELS,
    ActionKind.CREATE_SEAT: Wave.SEATS,
    ActionKind.REPLACE_SEAT: Wave.SEATS,
    ActionKind.REMOVE_COPY: Wave.SEATS,
    ActionKind.ADD_ALIAS: Wave.GATEWAY,
    ActionKind.RETARGET_ALIAS: Wave.GATEWAY,
    ActionKind.REMOVE_ALIAS: Wave.GATEWAY,
    ActionKind.RESTART_GATEWAY: Wave.GATEWAY,
    ActionKind.REMOVE_SEAT: Wave.REMOVALS,
    ActionKind.ADD_CLIENT: Wave.CLIENTS,
    ActionKind.UPDATE_CLIENT: Wave.CLIENTS,
    ActionKind.REKEY_CLIENT: Wave.CLIENTS,
    ActionKind.REVOKE_CLIENT: Wave.CLIENTS,
    ActionKind.WRITE_TARGETS: Wave.MONITORING,
}
CLIENT_CHANGES = frozenset(k for k, wave in WAVE_OF.items() if wave is Wave.CLIENTS)
SEAT_CHANGES = frozenset({ActionKind.CREATE_SEAT, ActionKind.REPLACE_SEAT})
ALIAS_CHANGES = frozenset(
    {ActionKind.ADD_ALIAS, ActionKind.RETARGET_ALIAS, ActionKind.REMOVE_ALIAS}
)


class Action(CoreModel):
    """One step of a plan; `wave` follows from `kind` (a saved plan may carry it too)."""

    kind: ActionKind
    target: str
    host: str
    wave: Wave = Wave.SEATS
    reasons: tuple[str, ...] = ()
    changes: tuple[FieldChange, ...] = ()
    prediction: Prediction | None = None  # what a created or replaced seat will get
    adopts: str | None = Field(
        None, description="a hand-made container this seat takes over (stopped, then removed)"
    )
    strategy: Strategy | None = Field(None, description="how a replaced seat is replaced")
    downtime: Downtime | None = Field(None, description="what a recreate takes away meanwhile")
    handoffs: tuple[Handoff, ...] = Field(
        (),
        description="a recreate's aliases served by a healthy gateway fallback while it "
        "loads (apply moves them there first and back after); `downtime.aliases` are the "
        "ones unavailable meanwhile",
    )
    strategy_line: str | None = Field(None, description="the strategy, why, and its downtime")

    @model_validator(mode="before")
    @classmethod
    def _wave_from_kind(cls, data: Any) -> Any:
        if isinstance(data, dict) and "kind" in data:
            wave = WAVE_OF[ActionKind(data["kind"])]
            if data.get("wave") not in (None, wave, wave.value):
                raise ValueError(f"a {data['kind']} action runs in wave {wave.value}")
            data = {**data, "wave": wave}
        return data

    @property
    def sort_key(self) -> tuple[int, bool, str, bool, str]:
        """Waves in order; the gateway restart after every alias change of its wave; a
        host's copies that are not live go before its seats start (they may hold a port)."""
        return (
            self.wave,
            self.kind is ActionKind.RESTART_GATEWAY,
            self.host,
            self.kind is not ActionKind.REMOVE_COPY,
            self.target,
        )


class NoOp(CoreModel):
    """Something in sync, and why fleet thinks so."""

    target: str
    reason: str


class Blocker(CoreModel):
    """A reason the plan must not be applied."""

    target: str
    message: str
