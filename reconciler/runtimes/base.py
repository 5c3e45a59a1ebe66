"""The `RuntimeAdapter` protocol: what apply, drain, bench and the loop do to a host's seats.

The pure half of a runtime (`fleet.runtimes.base.Runtime`: facts, reading, rendering) is
the core's; this half runs on a host through its `HostSession`: write the seats'
definitions (keeping what was there, to put back), start (create or replace) one seat,
remove one, restart its instance, read its log since a time, find the port it publishes.
Capabilities only some runtimes have are mixins an adapter inherits to declare them
(`AdoptsHandMade`: stop, start and remove an instance fleet did not create, which
`fleet import` adopts).

Called by `reconciler.workflows` (seat_wave, apply, drain, bench, reconcile) through
`reconciler.runtimes.adapter_for(host)`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Protocol

from fleet.runtimes.base import Runtime
from fleet.spec.models import DesiredFleet, Host
from reconciler.host import HostSession

# What a runtime reads back of the definitions it wrote on a host, to put them back on
# rollback: for compose the host's compose file (None: there was none).
Snapshot = str | None


class RuntimeAdapter(Protocol):
    """One runtime, as it runs on a host."""

    runtime: Runtime

    def describe(self, host: Host) -> str:
        """What `write_seats` writes on the host, for progress lines (a path)."""
        ...

    def snapshot(self, conn: HostSession, host: Host) -> Snapshot:
        """The definitions on the host now, as `restore` takes them back."""
        ...

    def write_seats(
        self,
        conn: HostSession,
        desired: DesiredFleet,
        host: Host,
        previous: Snapshot,
        changes: dict[str, dict[str, Any] | None],
    ) -> None:
        """Write `previous` with these seats' definitions set (dict) or dropped (None),
        atomically, keeping `previous` beside it."""
        ...

    def restore(self, conn: HostSession, host: Host, previous: Snapshot) -> None:
        """Put a snapshot back (none: remove what fleet wrote)."""
        ...

    def start_seat(self, conn: HostSession, desired: DesiredFleet, host: Host, seat: str) -> None:
        """Create or replace one seat's instance from its definition; no other seat moves."""
        ...

    def remove_seat(self, conn: HostSession, desired: DesiredFleet, host: Host, seat: str) -> None:
        """Stop and remove one seat's instance."""
        ...

    def restart(self, conn: HostSession, host: Host, instance: str) -> None:
        """Restart a running instance in place (the watchdog's remedy)."""
        ...

    def restart_command(self, instance: str) -> str:
        """The command that restarts one instance in place (a gateway's `restart:`)."""
        ...

    def read_log(self, conn: HostSession, instance: str, since: str, lines: int) -> str:
        """The last `lines` of an instance's log since a UTC time (`date -u` format)."""
        ...

    def port_of(self, conn: HostSession, host: Host, seat: str) -> int | None:
        """The port a seat's instance publishes, as the runtime reports it."""
        ...

    def port_in(self, previous: Snapshot, seat: str) -> int | None:
        """The engine port a seat had in a snapshot."""
        ...


class AdoptsHandMade(ABC):
    """The capability of a runtime whose hand-made instances `fleet import` adopts and
    apply takes over: an adapter declares it by inheriting this mixin."""

    @abstractmethod
    def stop_hand_made(self, conn: HostSession, name: str) -> None:
        """Stop it (it stays, to be started again on rollback)."""

    @abstractmethod
    def start_hand_made(self, conn: HostSession, name: str) -> None:
        """Start it again."""

    @abstractmethod
    def remove_hand_made(self, conn: HostSession, name: str) -> None:
        """Remove it, once the seat that took it over is healthy."""
