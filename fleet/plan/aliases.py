"""Alias actions: what the gateway config would change from, to, and why.

Called by `fleet.plan`. Compares the desired entries (the gateway kind's, `fleet.gateways`)
with the config observed on the gateway host; a restart action follows any change, and
says what it costs: nothing behind a front (blue/green), every alias for the length of
the last in-place restart otherwise.
"""

from __future__ import annotations

from fleet.gateways import kind_of
from fleet.observed.gateway_config import GatewayEntry
from fleet.observed.models import Observation
from fleet.plan.actions import Action, ActionKind
from fleet.secrets import mask_mapping, redact_url
from fleet.spec.models import DesiredFleet, Gateway


def alias_actions(
    desired: DesiredFleet,
    observation: Observation,
    *,
    only: frozenset[str] = frozenset(),
) -> list[Action]:
    """Add, retarget and remove actions for aliases, plus the gateway restart."""
    gateway = desired.gateway
    live = observation.gateway
    if gateway is None or live is None or live.config is None or live.config_text is None:
        return []
    kind = kind_of(gateway)
    wanted = kind.desired_entries(desired, only)
    routed = live.config.by_alias()
    found: list[Action] = []

    def add(kind: ActionKind, target: str, reason: str) -> None:
        found.append(Action(kind=kind, target=target, host=gateway.host, reasons=(reason,)))

    for alias, want in wanted.items():
        entry = routed.get(alias)
        if entry is None:
            add(ActionKind.ADD_ALIAS, alias, f"routes to seat {want.seat} at {want.address}")
        elif reason := _retarget_reason(entry, want):
            add(ActionKind.RETARGET_ALIAS, alias, reason)
    for alias, entry in sorted(routed.items()):
        if alias in wanted or (only and entry.seat not in only):
            continue
        if alias in gateway.retired_aliases:
            add(ActionKind.REMOVE_ALIAS, alias, "retired in desired/")
        elif entry.managed:
            add(ActionKind.REMOVE_ALIAS, alias, f"seat {entry.seat} no longer routes it")
    edited = kind.render_config(live.config_text, desired, only)
    if found or edited != live.config_text:
        found.append(
            Action(
                kind=ActionKind.RESTART_GATEWAY,
                target="gateway",
                host=gateway.host,
                reasons=(f"load the edited {gateway.config_path}", _cost(gateway, observation)),
            )
        )
    return found


def _cost(gateway: Gateway, observation: Observation) -> str:
    """What loading the new config costs the clients."""
    if gateway.front is not None:
        return (
            "gateway: blue/green behind the front (a second proxy with the new config, "
            "verified, then the front switches), no alias unavailable"
        )
    host = observation.hosts.get(gateway.host)
    last = host.gateway_restart_seconds if host else None
    if last is None:
        return "gateway: restart in place, every alias unavailable while it restarts"
    return (
        f"gateway: restart in place, every alias unavailable for ~{max(round(last), 1)} s "
        f"(last restart took {last:.1f} s)"
    )


def _retarget_reason(entry: GatewayEntry, want: GatewayEntry) -> str | None:
    address, seat = want.address, want.seat
    was = redact_url(entry.address) if entry.address else entry.address
    if not entry.managed:
        if entry.route() == want.route():
            return None  # routes as desired/ says: adopted as it stands
        return f"adopt the hand-written entry: {was} -> {address} (seat {seat})"
    if entry.seat != seat:
        moved = f" ({was} -> {address})" if entry.address != address else ""
        return f"seat {entry.seat} -> {seat}{moved}"
    if entry.address != address or entry.model != want.model:
        return f"{entry.model} at {was} -> {want.model} at {address}"
    if entry.params != want.params:
        return f"params {mask_mapping(entry.params)} -> {mask_mapping(want.params)}"
    if entry.context != want.context:
        return f"context {entry.context} -> {want.context}"
    return None
