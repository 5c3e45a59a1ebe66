"""The reconcile loop feeds the dashboard page it serves with --listen: each cycle's status
(the engines' gauges it read, its own bench results judged against the committed
baseline), the plan it decided on, and each apply with its commit."""

from __future__ import annotations

from pathlib import Path

from reconciler.adapters.dashboard import Dashboard
from tests.unit.workflows.test_loop_bench import commit_baseline, make_loop, master_key

__all__ = ["master_key"]  # the fixture, shared


def test_each_cycle_shows_its_status_plan_and_bench_on_the_page(tmp_path: Path) -> None:
    loop = make_loop(tmp_path)
    commit_baseline(loop)
    loop.engines.factor["reason"] = 0.45  # 55% below its baseline: critical
    loop.reconciler.dashboard = Dashboard()
    loop.cycle()
    dashboard = loop.reconciler.dashboard
    status = dashboard.status
    assert status is not None
    seats = {s.seat: s for h in status.hosts for s in h.seats}
    assert seats["reason"].running == 0 and seats["reason"].port == 8015
    bench = seats["reason"].bench
    assert bench is not None and (bench.level, bench.ratio) == ("critical", 0.45)
    assert any(f.kind.value == "bench-regression" for f in status.findings)
    assert dashboard.history.plans[0].summary.endswith("(nothing)")  # the move it chose
    reply = dashboard.answer("/")
    assert reply is not None and b"45.0 tok/s (0.45x) critical" in reply.body


def test_an_apply_of_the_loop_is_listed_with_its_commit(tmp_path: Path) -> None:
    loop = make_loop(tmp_path, deployed=False, auto_apply=True)
    loop.reconciler.dashboard = Dashboard()
    loop.cycle()
    applies = loop.reconciler.dashboard.history.applies
    assert applies and applies[0].result == "apply"
    assert applies[0].desired_commit and "create seat" in applies[0].summary
