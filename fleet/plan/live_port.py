"""Which of its two ports a seat serves on now, so everything follows the live one.

A surge starts a seat's new copy on its second port (`Seat.second_port`) and removes the
old one, so after it the seat serves on the other port, under the instance name
`<seat>-b` (`DesiredFleet.instance_name`); the next surge goes back. `follow_live_ports`
reads that from an observation and returns desired/ with those seats' `port` and
`surge_port` swapped: render, the gateway's entries, the health gate, drain and the
inventory then speak of the port that is live, and plan after a surge is 0. Called by
every workflow that observes before it plans, applies or writes the inventory. Pure.
"""

from __future__ import annotations

from fleet.observed.models import Observation, ObservedHost, ObservedSeat
from fleet.spec.models import DesiredFleet


def declared(desired: DesiredFleet) -> DesiredFleet:
    """desired/ as its files say, every seat on its own `port`."""
    for seat in sorted(desired.live_on_second):
        desired = desired.flipped(seat)
    return desired


def follow_live_ports(desired: DesiredFleet, observation: Observation) -> DesiredFleet:
    """desired/ with each seat on the port its live copy serves on (of its two)."""
    desired = declared(desired)
    where = observation.seat_index()
    for name in sorted(desired.seats):
        if live_ports(observation, name, where.get(name)) == {desired.seats[name].second_port}:
            desired = desired.flipped(name)
    return desired


def live_ports(
    observation: Observation, seat: str, found: tuple[ObservedHost, ObservedSeat] | None
) -> set[int]:
    """The ports the seat's managed, running instances serve on (`found`: where
    `observation.seat` says it runs); of two copies (an interrupted surge), the one the
    gateway routes to."""
    if found is None:
        return set()
    ports = {
        s.port
        for s in found[0].seats
        if s.managed and s.name == seat and s.instance.running and s.port is not None
    }
    routed = observation.gateway.routed_ports(seat) if observation.gateway else set()
    return ports & routed if len(ports) > 1 and ports & routed else ports


def as_planned(desired: DesiredFleet, live_on_second: tuple[str, ...]) -> DesiredFleet:
    """desired/ with the seats a plan found on their second port there (what apply runs on)."""
    desired = declared(desired)
    for seat in live_on_second:
        if seat in desired.seats:
            desired = desired.flipped(seat)
    return desired
