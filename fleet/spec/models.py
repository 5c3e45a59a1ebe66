"""The desired-state model: what operators write in desired/ and review in pull requests.

`DesiredFleet` is the whole of desired/: fleet-wide settings, hosts, seats and the gateway.
Every model is strict (`extra="forbid"`) and frozen; field descriptions feed `fleet schema`.
Cross-file rules (a seat's host exists, aliases are unique, ...) live in `validate`.
Each file's model lives in a module of its own (`fleet_settings`, `host`, `seat`,
`gateway`) and is re-exported here, where every reader of desired/ imports it from.
"""

from typing import Self

from pydantic import Field

from fleet.base import CoreModel
from fleet.spec.fleet_settings import (
    BenchSettings,
    ComposeSettings,
    ConcurrencyBand,
    DenyWindow,
    FleetSettings,
    ImagePolicy,
    InventorySettings,
    ReconcileSettings,
    SshSettings,
)
from fleet.spec.gateway import Gateway, GatewayFront, GatewayRestart
from fleet.spec.host import GpuSpec, Host, HostSsh
from fleet.spec.seat import Seat, Speculative

__all__ = [
    "SECOND_COPY",
    "BenchSettings",
    "ComposeSettings",
    "ConcurrencyBand",
    "DenyWindow",
    "DesiredFleet",
    "FleetSettings",
    "Gateway",
    "GatewayFront",
    "GatewayRestart",
    "GpuSpec",
    "Host",
    "HostSsh",
    "ImagePolicy",
    "InventorySettings",
    "ReconcileSettings",
    "Seat",
    "Speculative",
    "SshSettings",
]


SECOND_COPY = "-b"  # the instance name of a seat serving on its second port


class DesiredFleet(CoreModel):
    """The whole of desired/."""

    settings: FleetSettings = FleetSettings()
    hosts: dict[str, Host] = Field(default_factory=dict)
    seats: dict[str, Seat] = Field(default_factory=dict)
    gateway: Gateway | None = None
    live_on_second: frozenset[str] = Field(
        default_factory=frozenset,
        description="Seats whose live copy serves on its second port (a surge moved it "
        "there): set from what runs (`fleet.plan.live_port`), never by desired/.",
    )

    def seats_on(self, host: str) -> list[Seat]:
        """Seats of one host, sorted by name."""
        return sorted((s for s in self.seats.values() if s.host == host), key=lambda s: s.name)

    def seats_by_host(self) -> dict[str, list[Seat]]:
        """`seats_on` of every host with seats, in one pass over the seats (asking
        `seats_on` host after host scans the whole fleet each time)."""
        by_host: dict[str, list[Seat]] = {}
        for seat in sorted(self.seats.values(), key=lambda s: s.name):
            by_host.setdefault(seat.host, []).append(seat)
        return by_host

    def instance_name(self, seat: str) -> str:
        """The seat's instance (compose service): its name, `<name>-b` on its second port."""
        return f"{seat}{SECOND_COPY}" if seat in self.live_on_second else seat

    def flipped(self, seat: str) -> Self:
        """This fleet with the seat on its other port, as a surge of it leaves it."""
        was = self.seats[seat]
        moved = was.model_copy(update={"port": was.second_port, "surge_port": was.port})
        return self.model_copy(
            update={
                "seats": {**self.seats, seat: moved},
                "live_on_second": self.live_on_second ^ {seat},
            }
        )
