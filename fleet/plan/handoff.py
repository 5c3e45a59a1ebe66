"""Handoff: a recreated seat's aliases served by their gateway fallbacks while it loads.

A recreate stops the old copy before the new one loads. Where desired/gateway.yaml
declares `fallbacks` for an alias of that seat and a fallback's seat is healthy, apply
moves the alias to that seat first (through the gateway, blue/green behind its front),
drains the old copy, recreates it behind its health gate, and moves the alias back
(`reconciler.workflows.handoff`). Plan decides which aliases are handed off here, and
says so on the seat's line; an alias with no healthy fallback is down as before.

A fallback qualifies when its seat is another seat of desired/, running, answering the
gateway's probe, routed to by the live gateway config, and not touched by the same plan
(no seat action on it, no alias change of the fallback alias). A seat that says
`handoff: false` never hands off (a different model must never answer for it), and a
gateway without a front does not either: each move would restart the proxy in place and
take every alias down twice. Pure: used by `fleet.plan.strategy` (plan) and by apply
(`handed_off`, the fleet as the gateway routes while handed off).
"""

from __future__ import annotations

from collections.abc import Collection

from pydantic import Field

from fleet.base import CoreModel
from fleet.observed.models import Observation
from fleet.spec.models import DesiredFleet, Seat

NO_FRONT = "no handoff: the gateway has no front, so it would restart in place"


class Handoff(CoreModel):
    """One alias of a recreated seat, served by its fallback while the seat loads."""

    alias: str = Field(description="the alias of the recreated seat")
    fallback: str = Field(description="the alias that serves it meanwhile (gateway fallbacks)")
    seat: str = Field(description="the fallback's seat: healthy, and untouched by this plan")


class Untouchable(CoreModel):
    """What the plan changes besides a recreate: no fallback may lean on it."""

    seats: frozenset[str] = frozenset()
    aliases: frozenset[str] = frozenset()


def find_handoffs(
    desired: DesiredFleet,
    observation: Observation,
    seat: Seat,
    aliases: Collection[str],
    busy: Untouchable,
) -> tuple[tuple[Handoff, ...], str | None]:
    """The aliases (of `aliases`, those live on the seat) a recreate hands off, and a note
    when a healthy fallback exists but handoff is not possible (no front)."""
    gateway = desired.gateway
    if gateway is None or not seat.handoff:
        return (), None
    found = []
    for alias in aliases:
        fallback = _healthy_fallback(desired, observation, seat, alias, busy)
        if fallback is not None:
            found.append(Handoff(alias=alias, fallback=fallback[0], seat=fallback[1]))
    if found and gateway.front is None:
        return (), NO_FRONT
    return tuple(found), None


def _healthy_fallback(
    desired: DesiredFleet,
    observation: Observation,
    seat: Seat,
    alias: str,
    busy: Untouchable,
) -> tuple[str, str] | None:
    """(fallback alias, its seat) of the first healthy fallback of `alias`, if any."""
    assert desired.gateway is not None
    owners = {a: s.name for s in desired.seats.values() for a in s.aliases}
    for fallback in desired.gateway.fallbacks.get(alias, ()):
        other = owners.get(fallback)
        if other is None or other == seat.name or other in busy.seats:
            continue
        if fallback in busy.aliases or not serves(observation, fallback, other):
            continue
        return fallback, other
    return None


def serves(observation: Observation, alias: str, seat: str) -> bool:
    """Whether the live gateway routes `alias` to `seat`, and that seat runs and answers."""
    gateway = observation.gateway
    found = observation.seat(seat)
    if gateway is None or gateway.config is None or found is None:
        return False
    if not found[1].instance.running:
        return False
    entry = gateway.config.by_alias().get(alias)
    if entry is None or entry.seat != seat or not entry.address:
        return False
    probe = gateway.probes.get(entry.address)
    return probe is None or probe.answers


def handed_off(desired: DesiredFleet, seat: str, handoffs: Collection[Handoff]) -> DesiredFleet:
    """desired/ as the gateway routes while the seat's aliases are on their fallbacks: each
    handed alias belongs to its fallback's seat (that seat's address, model and context)."""
    seats = dict(desired.seats)
    handed = {h.alias for h in handoffs}
    seats[seat] = seats[seat].model_copy(
        update={"aliases": tuple(a for a in seats[seat].aliases if a not in handed)}
    )
    for handoff in handoffs:
        other = seats[handoff.seat]
        seats[handoff.seat] = other.model_copy(update={"aliases": (*other.aliases, handoff.alias)})
    return desired.model_copy(update={"seats": seats})


def describe(handoffs: Collection[Handoff]) -> str:
    """`coder, code served by mid and fim served by big` (grouped by fallback)."""
    groups: dict[str, list[str]] = {}
    for handoff in handoffs:
        groups.setdefault(handoff.fallback, []).append(handoff.alias)
    return " and ".join(f"{', '.join(a)} served by {f}" for f, a in groups.items())
