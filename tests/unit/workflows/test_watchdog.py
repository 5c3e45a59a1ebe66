"""The reconcile loop's watchdog on a fake host: a stuck engine is restarted once per
window, and not at all while the fleet is suspended."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fleet.facts.engine_metrics import EngineLoad
from fleet.plan.reconcile import LoadSample
from fleet.spec.models import ReconcileSettings
from reconciler.workflows.reconcile import LoopOptions, Reconciler
from reconciler.workflows.repo import FleetRepo
from tests.fakes.host import FakeHost, FakeSessions
from tests.unit.plan.fakes import in_sync
from tests.unit.render.test_compose import example


class Said:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def emit(self, event: str, **fields: Any) -> None:
        self.events.append((event, fields))


def loop(suspend: bool = False) -> tuple[Reconciler, FleetRepo, FakeHost, Said]:
    fleet = example()
    settings = fleet.settings.model_copy(
        update={"reconcile": ReconcileSettings(suspend=suspend, stuck_after=60)}
    )
    fleet = fleet.model_copy(update={"settings": settings})
    said = Said()
    reconciler = Reconciler(Path("desired"), LoopOptions(), said)
    busy = EngineLoad(running=2, waiting=1, generated=500)
    reconciler.watchdog.samples["coder"] = [LoadSample(at, busy) for at in (-200.0, -100.0, -1.0)]
    return reconciler, FleetRepo(Path("desired"), fleet, []), FakeHost("tower"), said


def restarts(host: FakeHost) -> list[str]:
    return [detail for kind, detail in host.journal if detail.startswith("docker restart")]


def test_a_stuck_engine_is_restarted_once_per_window() -> None:
    reconciler, repo, tower, said = loop()
    observation = in_sync(repo.desired)
    sessions = FakeSessions({"tower": tower})
    reconciler._watchdog(repo, sessions, observation, hold=None)  # type: ignore[arg-type]
    assert restarts(tower) == ["docker restart fleet-tower-coder-1"]
    assert said.events[0][0] == "watchdog-restart" and said.events[0][1]["seat"] == "coder"
    busy = EngineLoad(running=2, waiting=0, generated=500)
    reconciler.watchdog.samples["coder"] = [LoadSample(at, busy) for at in (-200.0, -1.0)]
    reconciler._watchdog(repo, sessions, observation, hold=None)  # type: ignore[arg-type]
    assert len(restarts(tower)) == 1  # not again inside its window
    text = reconciler.metrics.text().decode()
    assert 'fleet_heal_total{reason="stuck",seat="coder"} 1.0' in text


def test_nothing_is_restarted_while_suspended_or_held() -> None:
    reconciler, repo, tower, _ = loop(suspend=True)
    observation = in_sync(repo.desired)
    reconciler._watchdog(repo, FakeSessions({"tower": tower}), observation, hold=None)  # type: ignore[arg-type]
    reconciler, repo, tower, _ = loop()
    reconciler._watchdog(repo, FakeSessions({"tower": tower}), observation, hold="dirty clone")  # type: ignore[arg-type]
    assert restarts(tower) == []
