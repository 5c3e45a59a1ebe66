"""The reconcile loop measures (`reconcile.bench`) on fake hosts, cycle after cycle on a
fake clock: each seat once an interval and one at a time, never while an apply holds its
host, and a regression against the committed baseline is a finding, an event, a webhook
post and a metric until a measurement shows it restored.

The measurement itself (streamed requests timed as they arrive) is `fleet bench`'s and is
proven on the lab; here the loop's seam for it (`ScheduledBench.measure`) is a stand-in
that answers at each seat's configured rate, spending five seconds of the fake clock.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from fleet.errors import GatewayError
from fleet.names import HASH_LABEL
from fleet.observed.bench import BenchRecord, BenchResult, DecodeStats, render_record
from fleet.observed.models import Observation
from fleet.spec.models import DesiredFleet, Seat
from reconciler.adapters.webhook import Notifier
from reconciler.host import Sessions
from reconciler.workflows.bench import BenchOptions
from reconciler.workflows.loop_bench import ScheduledBench
from reconciler.workflows.reconcile import LoopOptions, Reconciler
from tests.unit.cli.fake_fleet import MASTER_KEY, FakeFleet, make_fleet

SEATS = ("coder", "embed", "reason", "llama8b")  # embed serves no chat: never measured
LOCK = "/srv/fleet/.fleet.lock"
HOLDER = "ops@laptop pid 42 `fleet apply` since 2026-12-02T10:00:00Z"
RATE = 100.0


@dataclass
class Engines:
    """The loop's measurement seam: each seat decodes at RATE x its factor."""

    fake: FakeFleet
    factor: dict[str, float] = field(default_factory=dict)
    calls: list[tuple[str, str, float]] = field(default_factory=list)  # seat, via, started
    active: int = 0
    most_at_once: int = 0
    under_lock: list[str] = field(default_factory=list)

    def __call__(
        self,
        desired: DesiredFleet,
        sessions: Sessions,
        observation: Observation,
        seat: Seat,
        options: BenchOptions,
    ) -> BenchResult:
        self.active += 1
        self.most_at_once = max(self.most_at_once, self.active)
        if LOCK in self.fake.hosts[seat.host].files:
            self.under_lock.append(seat.name)
        self.calls.append((seat.name, options.via, self.fake.clock.now))
        self.fake.clock.sleep(5.0)
        self.active -= 1
        found = observation.seat(seat.name)
        assert found is not None
        rate = RATE * self.factor.get(seat.name, 1.0)
        return BenchResult(
            seat=seat.name,
            host=seat.host,
            spec_hash=found[1].instance.labels.get(HASH_LABEL),
            date="2026-12-04T02:00:00Z",
            via=options.via,
            decode_tok_s=DecodeStats(median=rate, min=rate, max=rate, n=3),
            ttft_s=0.25,
        )

    def measured(self, seat: str) -> list[float]:
        return [at for name, _, at in self.calls if name == seat]


class Said:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def emit(self, event: str, **fields: Any) -> None:
        self.events.append((event, fields))

    def of(self, event: str) -> list[dict[str, Any]]:
        return [fields for name, fields in self.events if name == event]


class Posted(Notifier):
    """The webhook, kept in memory."""

    def __init__(self) -> None:
        super().__init__(None)
        self.posts: list[dict[str, Any]] = []

    def send(self, event: dict[str, Any]) -> None:
        self.posts.append(event)


@dataclass
class Loop:
    fake: FakeFleet
    engines: Engines
    said: Said
    posted: Posted
    reconciler: Reconciler

    def cycle(self, then_wait: float = 60.0) -> list[dict[str, Any]]:
        """One cycle and the wait after it; the bench events it emitted."""
        seen = len(self.said.events)
        self.reconciler.cycle()
        self.fake.clock.sleep(then_wait)
        return [f for name, f in self.said.events[seen:] if name == "bench"]

    def metrics(self) -> str:
        return self.reconciler.metrics.text().decode()


def make_loop(
    tmp_path: Path, bench: str = "{interval: 5m}", deployed: bool = True, auto_apply: bool = False
) -> Loop:
    fake = make_fleet(tmp_path, seats=SEATS)
    fleet_yaml = fake.desired / "fleet.yaml"
    fleet_yaml.write_text(fleet_yaml.read_text() + f"reconcile:\n  bench: {bench}\n")
    fake.commit("the loop measures")
    if deployed:
        fake.deploy("tower")
        fake.deploy("rig")
        fake.route_gateway()
    engines, said, posted = Engines(fake), Said(), Posted()
    reconciler = Reconciler(
        fake.desired,
        LoopOptions(auto_apply=auto_apply),
        said,
        notifier=posted,
        open_sessions=fake.sessions,
        clock=fake.clock,
        bench=ScheduledBench(fake.clock, measure=engines),
    )
    return Loop(fake, engines, said, posted, reconciler)


@pytest.fixture(autouse=True)
def master_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in MASTER_KEY.items():
        monkeypatch.setenv(name, value)


def commit_baseline(loop: Loop) -> None:
    """BENCH.json with a baseline at RATE for every chat seat, as `fleet bench --write`."""
    results = []
    for host in ("tower", "rig"):
        for container in loop.fake.hosts[host].containers.values():
            seat = container.seat()
            if seat in ("coder", "reason", "llama8b"):
                results.append(
                    BenchResult(
                        seat=str(seat),
                        host=host,
                        spec_hash=container.labels[HASH_LABEL],
                        date="2026-12-01T00:00:00Z",
                        via="gateway",
                        decode_tok_s=DecodeStats(median=RATE, min=RATE, max=RATE, n=3),
                        baseline=True,
                    )
                )
    path = loop.fake.root / "inventory" / "BENCH.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_record(BenchRecord(results=tuple(results))))
    loop.fake.commit("fleet bench: baseline")


def test_each_seat_is_measured_once_an_interval_one_at_a_time(tmp_path: Path) -> None:
    loop = make_loop(tmp_path)
    first = loop.cycle()
    assert [(e["seat"], e["via"]) for e in first] == [
        ("coder", "gateway"),
        ("llama8b", "gateway"),
        ("reason", "gateway"),
    ]  # by alias, one after another; embed serves no chat
    for _ in range(11):  # a cycle a minute for eleven minutes more
        loop.cycle()
    engines = loop.engines
    assert engines.most_at_once == 1
    for seat in ("coder", "reason", "llama8b"):
        starts = engines.measured(seat)
        gaps = [b - a for a, b in itertools.pairwise(starts)]
        assert len(starts) == 3 and all(300 <= gap < 300 + 60 + 15 for gap in gaps), starts
    assert engines.measured("embed") == []
    # no committed baseline: measured, exported, never judged (the loop makes no baseline)
    assert all(e["baseline_ratio"] is None and e["regression"] is None for e in first)
    text = loop.metrics()
    assert (
        'fleet_bench_decode_tokens_per_second{host="tower",seat="coder",via="gateway"} 100.0'
        in (text)
    )
    assert 'fleet_bench_ttft_seconds{host="rig",seat="llama8b",via="gateway"} 0.25' in text
    assert "fleet_bench_baseline_ratio{" not in text
    assert not (loop.fake.root / "inventory" / "BENCH.json").exists()  # nothing written


def test_via_seat_measures_on_the_port(tmp_path: Path) -> None:
    loop = make_loop(tmp_path, bench="{interval: 30s, via: seat}")
    assert {e["via"] for e in loop.cycle(then_wait=30)} == {"seat"}
    assert [e["seat"] for e in loop.cycle()] == ["coder", "llama8b", "reason"]  # 30 s later


def test_a_locked_host_is_skipped_until_its_apply_is_done(tmp_path: Path) -> None:
    loop = make_loop(tmp_path)
    tower = loop.fake.hosts["tower"]
    tower.files[LOCK] = HOLDER + "\n"
    assert [e["seat"] for e in loop.cycle()] == ["llama8b"]
    skipped = loop.said.of("bench-skipped")
    assert [s["seat"] for s in skipped] == ["coder", "reason"]
    assert skipped[0]["reason"] == f"tower is locked by {HOLDER}"
    del tower.files[LOCK]
    assert [e["seat"] for e in loop.cycle()] == ["coder", "reason"]  # at once, not 5 min on
    assert loop.engines.under_lock == []


def test_the_loops_own_apply_is_never_measured_through(tmp_path: Path) -> None:
    loop = make_loop(tmp_path, deployed=False, auto_apply=True)
    loop.fake.route_gateway()
    assert loop.cycle() == []  # it applied: the cycle's observation predates the seats
    assert loop.said.of("applied") and loop.engines.calls == []
    assert [e["seat"] for e in loop.cycle(then_wait=300)] == ["coder", "llama8b", "reason"]
    loop.fake.edit(  # coder recreates as the service `coder` (the subject is the loop's bench)
        "seats/coder.yaml",
        "gpu_memory_utilization: 0.02",
        "gpu_memory_utilization: 0.03\nstrategy: recreate",
    )
    assert loop.cycle() == []  # every seat due, but a new commit applied: nothing measured
    assert len(loop.said.of("applied")) == 2
    assert [e["seat"] for e in loop.cycle()] == ["coder", "llama8b", "reason"]
    new_coder = loop.fake.hosts["tower"].containers["coder"].labels[HASH_LABEL]
    assert loop.reconciler.bench.results["coder"].spec_hash == new_coder  # type: ignore[union-attr]
    assert loop.engines.under_lock == []


@pytest.mark.parametrize(
    ("factor", "level", "severity"),
    [(0.6, "warning", "warning"), (0.45, "critical", "error")],
    ids=["40%-below-warns", "55%-below-is-critical"],
)
def test_a_regression_is_a_finding_an_event_and_a_post_until_restored(
    tmp_path: Path, factor: float, level: str, severity: str
) -> None:
    loop = make_loop(tmp_path)
    commit_baseline(loop)
    assert {e["baseline_ratio"] for e in loop.cycle(then_wait=300)} == {1.0}
    assert loop.said.of("bench-regression") == [] and loop.posted.posts == []

    loop.engines.factor["coder"] = factor
    (coder, *_) = loop.cycle(then_wait=300)
    assert (coder["seat"], coder["baseline_ratio"], coder["regression"]) == (
        "coder",
        factor,
        level,
    )
    (event,) = loop.said.of("bench-regression")
    below = f"{1 - factor:.0%} below its baseline"
    assert event["level"] == level and below in event["message"]
    (post,) = loop.posted.posts
    assert post["event"] == "bench-regression" and post["seat"] == "coder"
    text = loop.metrics()
    assert f'fleet_bench_baseline_ratio{{host="tower",seat="coder",via="gateway"}} {factor}' in text
    assert 'fleet_bench_baseline_ratio{host="tower",seat="reason",via="gateway"} 1.0' in text
    findings = {f.target: f for f in loop.reconciler.bench.findings()}  # type: ignore[union-attr]
    assert list(findings) == ["coder"] and findings["coder"].severity.value == severity
    before = _findings(text, severity)
    loop.cycle(then_wait=300)  # still slow: still a finding, not posted again
    assert len(loop.posted.posts) == 1 and _findings(loop.metrics(), severity) == before

    loop.engines.factor["coder"] = 1.0
    loop.cycle()
    (restored,) = loop.said.of("bench-restored")
    assert restored["seat"] == "coder" and restored["was"] == level
    assert [p["event"] for p in loop.posted.posts] == ["bench-regression", "bench-restored"]
    assert loop.reconciler.bench.findings() == []  # type: ignore[union-attr]
    assert 'fleet_bench_baseline_ratio{host="tower",seat="coder",via="gateway"} 1.0' in (
        loop.metrics()
    )
    assert _findings(loop.metrics(), severity) == before - 1


def _findings(text: str, severity: str) -> float:
    prefix = f'fleet_findings{{severity="{severity}"}} '
    return next((float(ln[len(prefix) :]) for ln in text.splitlines() if ln.startswith(prefix)), 0)


def test_a_failed_measurement_is_an_event_and_waits_for_the_next_interval(tmp_path: Path) -> None:
    loop = make_loop(tmp_path)
    measure = loop.engines

    def refuses(
        desired: DesiredFleet,
        sessions: Sessions,
        obs: Observation,
        seat: Seat,
        options: BenchOptions,
    ) -> BenchResult:
        if seat.name == "coder":
            raise GatewayError("environment variable LITELLM_MASTER_KEY is not set")
        return measure(desired, sessions, obs, seat, options)

    loop.reconciler.bench.measure = refuses  # type: ignore[union-attr]
    assert [e["seat"] for e in loop.cycle()] == ["llama8b", "reason"]
    (failed,) = loop.said.of("bench-failed")
    assert failed["seat"] == "coder" and "LITELLM_MASTER_KEY is not set" in failed["error"]
    loop.cycle()
    assert len(loop.said.of("bench-failed")) == 1  # not retried every cycle
    loop.cycle(then_wait=300)
    loop.cycle()
    assert len(loop.said.of("bench-failed")) == 2  # again once its interval passed
