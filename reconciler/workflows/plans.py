"""Plans and the inventory as a command or the reconcile loop uses them.

Build a plan (observe, plan, drift against the committed inventory), save and load it,
refuse a saved plan the live fleet has moved away from, and commit the inventory after an
apply or a bench (`reconciler.workflows.repo` holds what reading and writing the
inventory needs, without the planner). The command line prints what these return; nothing here
prints.
"""

from __future__ import annotations

import json
from pathlib import Path

from fleet.errors import FleetError, PlanError
from fleet.observed.bench import BenchResult, render_record
from fleet.observed.models import Observation
from fleet.plan.fingerprint import fingerprint, moved
from fleet.plan.plan import Plan, make_plan
from reconciler.adapters.git import commit_files, head_commit, open_repo
from reconciler.host import Sessions
from reconciler.workflows.observe import observe_fleet
from reconciler.workflows.repo import FleetRepo, find_drift, write_inventory

PLAN_FORMAT = "fleet-plan/1"


def build_plan(
    repo: FleetRepo,
    sessions: Sessions,
    *,
    prune: bool = False,
    seats: list[str] | None = None,
    loads: bool = False,
) -> tuple[Plan, Observation]:
    """Observe, then plan, with drift and the fingerprint of what the plan relies on;
    `loads`: the observation carries the engines' gauges too (`fleet status`)."""
    unknown = sorted(set(seats or ()) - set(repo.desired.seats))
    if unknown and not prune:
        raise FleetError(f"no such seat in desired/: {', '.join(unknown)}")
    observation = observe_fleet(repo.desired, sessions, loads=loads)
    drift = find_drift(repo, observation)
    plan = make_plan(
        repo.desired,
        observation,
        prune=prune,
        only_seats=frozenset(seats or ()),
        desired_commit=head_commit(repo.root),
        drift=drift.summary,
        drift_diff=drift.diff,
    )
    return plan, observation


def save_plan(plan: Plan, path: Path) -> None:
    """Write a plan for `fleet apply PLAN`."""
    payload = {"format": PLAN_FORMAT, "plan": plan.model_dump(mode="json")}
    path.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n")


def load_plan(path: Path) -> Plan:
    """Read a saved plan; FleetError if it is not one."""
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise FleetError(f"cannot read plan {path}: {error}") from error
    if not isinstance(data, dict) or data.get("format") != PLAN_FORMAT:
        raise FleetError(f"{path} is not a fleet plan ({PLAN_FORMAT})")
    return Plan.model_validate(data["plan"])


def fresh_saved_plan(repo: FleetRepo, sessions: Sessions, path: Path) -> Plan:
    """A saved plan, if desired/ and every fact it relied on are as they were; else PlanError."""
    saved = load_plan(path)
    commit = head_commit(repo.root)
    if saved.desired_commit != commit:
        raise PlanError(
            f"desired/ is at {commit or 'no commit'} but the plan was made at "
            f"{saved.desired_commit or 'no commit'}: make a new plan"
        )
    observation = observe_fleet(repo.desired, sessions)
    changed = moved(saved.fingerprint, fingerprint(repo.desired, observation, saved.actions))
    if changed:
        raise PlanError("the live fleet moved since the plan was made: " + "; ".join(changed))
    return saved


def applied_line(commit: str | None) -> str:
    """`applied desired/ at 3f1c2a9` (and whether it had uncommitted changes)."""
    if not commit:
        return "applied desired/ outside Git (no commit to record)"
    sha, dirty, _ = commit.partition("+")
    suffix = " with uncommitted changes (--allow-dirty)" if dirty else ""
    return f"applied desired/ at {sha[:12]}{suffix}"


def commit_inventory(
    repo: FleetRepo,
    sessions: Sessions,
    done: list[str],
    push: bool,
    applied: str | None,
    headline: str | None = None,
) -> str:
    """Observe, write the inventory, commit exactly its two files; what happened, in a line.
    The message's first line says how many changes, unless `headline` says otherwise (an
    interrupted apply, a refreshed inventory)."""
    observation = observe_fleet(repo.desired, sessions)
    paths = write_inventory(repo, repo.inventory(observation))
    if open_repo(repo.repo_root) is None:
        return f"wrote {paths[0]} (not a Git repository: nothing committed)"
    first = headline or f"fleet apply: {len(done)} change(s) to {repo.desired.settings.name}"
    message = (
        f"{first}\n\n{applied_line(applied)}\n\n" + "\n".join(f"- {line}" for line in done) + "\n"
    )
    # an interrupted apply's commit records what it did even if the inventory reads the same
    sha = commit_files(paths, message, push=push, record=headline is not None and bool(done))
    if sha is None:
        return f"{paths[0].name} and {paths[1].name} unchanged: nothing to commit"
    pushed = " and pushed" if push else ""
    return f"committed {paths[0].name} and {paths[1].name} as {sha[:12]}{pushed}"


def record_bench(repo: FleetRepo, sessions: Sessions, results: list[BenchResult]) -> str:
    """Append the results to BENCH.json, regenerate the inventory, commit exactly those."""
    record = repo.bench_record()
    record = record.model_copy(update={"results": (*record.results, *results)})
    repo.bench_path.parent.mkdir(parents=True, exist_ok=True)
    repo.bench_path.write_text(render_record(record))
    observation = observe_fleet(repo.desired, sessions)
    paths = [repo.bench_path, *write_inventory(repo, repo.inventory(observation))]
    if open_repo(repo.repo_root) is None:
        return f"wrote {repo.bench_path} (not a Git repository: nothing committed)"
    seats = ", ".join(r.seat for r in results)
    sha = commit_files(paths, f"fleet bench: {len(results)} seat(s) measured\n\n{seats}\n")
    if sha is None:
        return f"{', '.join(p.name for p in paths)} unchanged: nothing to commit"
    return f"committed {', '.join(p.name for p in paths)} as {sha[:12]}"
