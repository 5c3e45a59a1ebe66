"""The reconcile loop on the fake clock: it backs off exponentially (capped) after
temporary failures and says so in its metrics, reports a permanent failure once instead of
retrying it, restarts a stuck engine once per window, and finishes an apply that was
killed mid-surge on its next cycle, with no manual step.

Every wait of the loop goes through its `Clock` (`tests.fakes.clock.FakeClock`), so these
run in milliseconds; tests/unit/cli/test_apply_crash.py kills `fleet apply` at every step.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fleet.errors import FleetError, HostUnreachable, SpecError
from fleet.facts.engine_metrics import EngineLoad
from fleet.plan.reconcile import BACKOFF_CAP, LoadSample
from reconciler.workflows.reconcile import LoopOptions, Reconciler
from tests.fakes.clock import FakeClock
from tests.fakes.host import FakeSessions
from tests.unit.cli.fake_fleet import MASTER_KEY, make_fleet
from tests.unit.cli.test_apply_crash import CHANGES, assert_converged, crash_at
from tests.unit.plan.fakes import in_sync
from tests.unit.workflows.test_watchdog import Said, loop, restarts


def failing(errors: list[FleetError | None], clock: FakeClock) -> tuple[Reconciler, Said]:
    """A loop whose cycles fail (or succeed, for None) in this order, then stop."""
    said = Said()
    reconciler = Reconciler(Path("desired"), LoopOptions(interval=60.0), said, clock=clock)
    left = list(errors)

    def cycle() -> int:
        error = left.pop(0)
        if not left:
            reconciler.stop.set()
        if error is not None:
            raise error
        return 0

    reconciler._cycle = cycle  # type: ignore[method-assign]
    return reconciler, said


def metric(reconciler: Reconciler, name: str) -> str:
    line = next(x for x in reconciler.metrics.text().decode().splitlines() if x.startswith(name))
    return line.split()[-1]


def test_temporary_failures_back_off_exponentially_up_to_the_cap_and_reset() -> None:
    clock = FakeClock()
    down = HostUnreachable("connection refused", where="tower")
    reconciler, said = failing([down] * 8 + [None, None], clock)
    reconciler.run()
    assert clock.sleeps == [60.0, 120.0, 240.0, 480.0, 960.0, *[BACKOFF_CAP] * 3, 60.0]
    errors = [fields for event, fields in said.events if event == "error"]
    assert [e["retry_in"] for e in errors[:3]] == [60, 120, 240]
    assert all(e["temporary"] for e in errors) and len(errors) == 8
    assert reconciler.failures == 0  # a good cycle resets it
    assert metric(reconciler, "fleet_reconcile_backoff_seconds") == "60.0"


def test_the_backoff_is_in_the_metrics_while_it_lasts() -> None:
    clock = FakeClock()
    reconciler, _ = failing([HostUnreachable("refused", where="rig")] * 3, clock)
    reconciler.run()
    assert metric(reconciler, "fleet_reconcile_consecutive_failures") == "3.0"
    assert metric(reconciler, "fleet_reconcile_backoff_seconds") == "240.0"


def test_a_permanent_failure_is_reported_once_and_not_backed_off_as_if_time_would_fix_it() -> None:
    clock = FakeClock()
    bad = SpecError("seats/coder.yaml:3: unknown field 'contxt'")
    reconciler, said = failing([bad, bad, bad], clock)
    reconciler.run()
    errors = [fields for event, fields in said.events if event == "error"]
    assert len(errors) == 1 and errors[0]["temporary"] is False
    assert "nothing is retried" in errors[0]["action"]
    assert clock.sleeps == [60.0, 60.0]  # the interval: a new commit is picked up as ever


def test_the_watchdog_restarts_once_per_window_on_the_fake_clock() -> None:
    reconciler, repo, tower, said = loop()
    clock = reconciler.clock = FakeClock(now=10_000.0)
    busy = EngineLoad(running=2, waiting=1, generated=500)
    observation = in_sync(repo.desired)
    sessions = FakeSessions({"tower": tower})

    def look() -> None:
        seen = [LoadSample(clock.now - back, busy) for back in (120.0, 60.0, 0.0)]
        reconciler.watchdog.samples["coder"] = seen
        reconciler._watchdog(repo, sessions, observation, hold=None)  # type: ignore[arg-type]

    look()
    clock.sleep(179.0)  # inside 3 x stuck_after (60 s) of the restart
    look()
    assert len(restarts(tower)) == 1
    clock.sleep(2.0)
    look()
    assert len(restarts(tower)) == 2
    assert [e for e, _ in said.events].count("watchdog-restart") == 2


def test_the_loop_finishes_an_apply_killed_mid_surge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in MASTER_KEY.items():
        monkeypatch.setenv(name, value)
    fake = make_fleet(tmp_path, seats=("coder", "flash"))
    assert fake.fleet("apply", "--auto-approve").returncode == 0
    CHANGES["surge"](fake)
    crash_at(fake, monkeypatch, "surge.healthy")
    said: list[tuple[str, dict[str, Any]]] = []

    class Events:
        def emit(self, event: str, **fields: Any) -> None:
            said.append((event, fields))

    reconciler = Reconciler(
        fake.desired,
        LoopOptions(auto_apply=True),
        Events(),
        open_sessions=fake.sessions,
        clock=fake.clock,
        push=False,
    )
    assert reconciler.cycle() == 0, said
    steps = [f["message"] for e, f in said if e == "apply-step"]
    assert any("took over the lock of an apply that is gone" in s for s in steps), steps
    assert fake.front is not None
    assert_converged(fake, fake.front)
