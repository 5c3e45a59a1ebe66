"""`fleet status` and `fleet serve`: the live fleet at a glance, read-only.

`gather_status` observes every host once (one round trip each, the engines' /metrics read
inside that same fact script), plans from it as `fleet plan` does (read-only), and builds
the pure `fleet.report.status.FleetStatus`. `refresh` does that once for `fleet serve`
and hands the result to the dashboard page (`reconciler.adapters.dashboard.Dashboard`);
the reconcile loop feeds the same page from its own cycles
(`reconciler.workflows.reconcile`). Nothing here prints or writes on a host.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from fleet.plan.plan import Plan
from fleet.report.dashboard import Run
from fleet.report.status import FleetStatus, build_status, seat_loads
from fleet.secrets import referenced_variables
from fleet.spec.models import DesiredFleet
from reconciler.adapters.dashboard import Dashboard
from reconciler.host import Sessions
from reconciler.workflows.desired import require_valid
from reconciler.workflows.plans import build_plan
from reconciler.workflows.repo import FleetRepo

OpenSessions = Callable[[DesiredFleet], AbstractContextManager[Sessions]]


def gather_status(repo: FleetRepo, sessions: Sessions) -> tuple[FleetStatus, Plan]:
    """The fleet's status and the plan it was read with (one observation)."""
    plan, observation = build_plan(repo, sessions, loads=True)
    loads = seat_loads(observation)
    status = build_status(repo.desired, observation, plan, loads, repo.bench_record())
    return status, plan


def plan_run(plan: Plan, at: str, move: str | None = None) -> Run:
    """A plan as the page lists it."""
    summary = plan.summary() + (f" ({move})" if move else "")
    return Run(
        at=at,
        kind="plan",
        summary=summary,
        desired_commit=plan.desired_commit,
        live_commit=plan.live_commit,
        result="blocked" if plan.blockers else "pending" if plan.actions else "in sync",
    )


def secret_values(desired: DesiredFleet) -> list[str]:
    """The values of the environment variables desired/ references: never on the page."""
    names = referenced_variables(desired.model_dump_json())
    return [os.environ[n] for n in names if os.environ.get(n)]


def refresh(desired_dir: Path, open_sessions: OpenSessions, dashboard: Dashboard) -> FleetStatus:
    """Observe once and show the result on the page."""
    fleet, problems = require_valid(desired_dir)
    repo = FleetRepo(root=desired_dir, desired=fleet, warnings=problems)
    with open_sessions(fleet) as sessions:
        status, plan = gather_status(repo, sessions)
    dashboard.update(status, repo.bench_record(), secrets=secret_values(fleet))
    dashboard.record(plan_run(plan, status.observed_at))
    return status
