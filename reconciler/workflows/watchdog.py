"""The reconcile loop's watchdog: each cycle it samples the load of every running seat
(the engine's own /metrics, through the host's SSH connection), and finds the seats that
held requests without generating a token for `reconcile.stuck_after` seconds
(`fleet.plan.reconcile.stuck`). It restarts such an engine through its runtime, once per
three such windows, so that a restart that did not help is not repeated every cycle.

The samples live between cycles in a `Watchdog`; the loop decides whether it may act
(`--no-watchdog`, a suspended fleet, a held clone) and says what it did.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import NamedTuple

from fleet.engines import engine_load
from fleet.errors import FleetError
from fleet.facts.engine_metrics import EngineLoad
from fleet.observed.models import Observation, ObservedHost, ObservedSeat
from fleet.plan.reconcile import LoadSample, stuck
from reconciler.adapters.http import request_via
from reconciler.host import Sessions
from reconciler.runtimes import adapter_for
from reconciler.workflows.repo import FleetRepo
from reconciler.workflows.seats import seat_address

KEPT_SAMPLES = 50  # per seat: at the default interval, most of an hour
QUIET_WINDOWS = 3  # stuck_after windows after a restart in which the seat is left alone


class StuckSeat(NamedTuple):
    """A seat the watchdog found stuck: its name, the host it runs on, what runs there."""

    name: str
    host: ObservedHost
    live: ObservedSeat


@dataclass
class Watchdog:
    """Each running seat's recent load samples, and when it was last restarted."""

    samples: dict[str, list[LoadSample]] = field(default_factory=dict)
    restarted: dict[str, float] = field(default_factory=dict)

    def sample(
        self, repo: FleetRepo, sessions: Sessions, observation: Observation, now: float
    ) -> dict[str, EngineLoad]:
        """The load of every running seat that answered, recorded as a sample at `now`."""
        loads: dict[str, EngineLoad] = {}
        for name, seat in repo.desired.seats.items():
            found = observation.seat(name)
            if found is None or not found[1].instance.running:
                continue
            host = repo.desired.hosts[seat.host]
            try:
                address = seat_address(host)
                reply = request_via(
                    sessions.get(seat.host), address, seat.port, "GET", "/metrics", timeout=5
                )
            except FleetError:
                continue
            loads[name] = engine_load(reply.body)
            seen = self.samples.setdefault(name, [])
            seen.append(LoadSample(now, loads[name]))
            del seen[:-KEPT_SAMPLES]
        return loads

    def stuck_seats(
        self, observation: Observation, stuck_after: float, now: float
    ) -> Iterator[StuckSeat]:
        """Seats stuck for `stuck_after` s that were not restarted in their quiet windows."""
        quiet_since = now - QUIET_WINDOWS * stuck_after
        for name, seen in list(self.samples.items()):
            found = observation.seat(name)
            if self.restarted.get(name, -1e18) > quiet_since or found is None:
                continue
            if stuck(seen, stuck_after):
                yield StuckSeat(name, *found)

    def restart(self, repo: FleetRepo, sessions: Sessions, seat: StuckSeat, now: float) -> None:
        """Restart the seat's engine through its host's runtime; its samples start anew."""
        spec = repo.desired.hosts[seat.host.name]
        adapter_for(spec).restart(sessions.get(seat.host.name), spec, seat.live.instance.name)
        self.restarted[seat.name] = now
        self.samples[seat.name] = []
