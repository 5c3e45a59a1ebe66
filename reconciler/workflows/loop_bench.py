"""The reconcile loop's own measurements: `fleet bench` on a schedule (`reconcile.bench`).

Each cycle that applied nothing, every seat that serves chat and whose last measurement
started `interval` ago or more (on the loop's clock) is measured, one after another, so
no two probes ever share a GPU (or the gateway). A seat whose host holds an apply lock
(another `fleet apply`) is skipped until the lock is gone; one not running is left to
the findings that already say so. `via: gateway` measures by the seat's first alias with
the proxy's master key (a seat without an alias is measured on its port). Each result is
judged against the committed baseline (BENCH.json), never written: `fleet bench --write`
keeps the record. A regression is a finding, an event and a webhook post when it appears
or changes level, and again when it clears.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from fleet.engines import engine_for
from fleet.errors import FleetError
from fleet.observed.bench import BenchRecord, BenchResult, against_committed, regression_finding
from fleet.observed.findings import Finding
from fleet.observed.models import Observation
from fleet.spec.models import BenchSettings, DesiredFleet, Seat
from reconciler.clock import Clock
from reconciler.host import Sessions
from reconciler.workflows.bench import BenchOptions, bench_seat
from reconciler.workflows.locks import lock_path

Measure = Callable[[DesiredFleet, Sessions, Observation, Seat, BenchOptions], BenchResult]


class Say(Protocol):
    """An event (a log line) or a notification (a webhook post)."""

    def __call__(self, event: str, **fields: Any) -> None: ...


@dataclass
class ScheduledBench:
    """When each seat was last measured, and its newest judged result."""

    clock: Clock
    measure: Measure = bench_seat
    started: dict[str, float] = field(default_factory=dict)
    results: dict[str, BenchResult] = field(default_factory=dict)

    def due(self, settings: BenchSettings, desired: DesiredFleet) -> list[str]:
        """Seats serving chat whose last measurement started `interval` ago or more."""
        for gone in set(self.results) - set(desired.seats):
            del self.results[gone]
        now = self.clock.monotonic()
        return [
            name
            for name, seat in sorted(desired.seats.items())
            if engine_for(seat.engine).serves_chat(seat)
            and now - self.started.get(name, -1e18) >= settings.interval
        ]

    def sweep(
        self,
        desired: DesiredFleet,
        sessions: Sessions,
        observation: Observation,
        record: BenchRecord,
        events: Say,
        notify: Say,
        stop: Callable[[], bool],
    ) -> None:
        """Measure every due seat in turn (stopping between seats when asked to)."""
        settings = desired.settings.reconcile.bench
        if settings is None:
            return
        for name in self.due(settings, desired):
            if stop():
                return
            seat = desired.seats[name]
            found = observation.seat(name)
            if (
                found is None
                or not found[1].instance.running
                or self._locked(desired, sessions, seat, events)
            ):
                continue
            self.started[name] = self.clock.monotonic()
            via = settings.via if seat.aliases and desired.gateway else "seat"
            options = BenchOptions(depth=settings.depth, via=via)
            try:
                result = self.measure(desired, sessions, observation, seat, options)
            except FleetError as err:
                events("bench-failed", seat=name, host=seat.host, via=via, error=str(err))
                continue
            self._judged(against_committed(result, record), events, notify)

    def findings(self) -> list[Finding]:
        """Every seat whose newest measurement regressed."""
        found = (regression_finding(r) for _, r in sorted(self.results.items()))
        return [f for f in found if f is not None]

    def _locked(self, desired: DesiredFleet, sessions: Sessions, seat: Seat, events: Say) -> bool:
        """True when the seat's host holds an apply lock (or cannot be asked)."""
        try:
            held = sessions.get(seat.host).read_file(lock_path(desired.hosts[seat.host]))
        except FleetError:
            return True
        if held is not None:
            why = f"{seat.host} is locked by {held.strip() or 'an apply'}"
            events("bench-skipped", seat=seat.name, host=seat.host, reason=why)
        return held is not None

    def _judged(self, result: BenchResult, events: Say, notify: Say) -> None:
        before = self.results.get(result.seat)
        self.results[result.seat] = result
        was = before.regression if before else None
        events(
            "bench",
            seat=result.seat,
            host=result.host,
            via=result.via,
            decode_tok_s=result.decode_tok_s.median if result.decode_tok_s else None,
            ttft_s=result.ttft_s,
            baseline_ratio=result.baseline_ratio,
            regression=result.regression,
        )
        said = {"seat": result.seat, "host": result.host, "baseline_ratio": result.baseline_ratio}
        if result.regression is not None and result.regression != was:
            finding = regression_finding(result)
            message = finding.message if finding else ""
            events("bench-regression", level=result.regression, message=message, **said)
            notify("bench-regression", level=result.regression, message=message, **said)
        elif result.regression is None and was is not None:
            events("bench-restored", was=was, **said)
            notify("bench-restored", was=was, **said)
