"""Plan Prometheus's target files: what apply's monitoring wave would write, and the
drift between the files and desired/ (pure).

The files a plan compares are rendered (`fleet.render.targets`) from desired/ with every
seat on the port it will serve on once the plan's surges have run, so a surge's target
moves in the same apply, and a seat gone from desired/ loses its target in it. A file
that differs from desired/ as it is live now (edited by hand, deleted, never written)
is also a finding.
"""

from __future__ import annotations

from collections.abc import Sequence

from fleet.base import Severity
from fleet.observed.findings import Finding, FindingKind
from fleet.observed.models import Observation
from fleet.plan.actions import Action, ActionKind
from fleet.plan.diff import FieldChange
from fleet.render import targets as rendered
from fleet.spec.models import DesiredFleet


def after_surges(desired: DesiredFleet, actions: Sequence[Action]) -> DesiredFleet:
    """desired/ with each seat the plan surges on the port its new copy takes."""
    for action in actions:
        if action.kind is ActionKind.REPLACE_SEAT and action.strategy == "surge":
            desired = desired.flipped(action.target)
    return desired


def target_actions(
    desired: DesiredFleet, observation: Observation, actions: Sequence[Action]
) -> tuple[list[Action], list[Finding]]:
    """One write-targets action per file that would change; findings for drift."""
    monitoring, seen = desired.settings.monitoring, observation.targets
    if monitoring is None or seen is None:
        return [], []
    if seen.error is not None:
        message = f"cannot read {seen.folder}: {seen.error}"
        return [], [_finding(seen.host, seen.folder, message, Severity.ERROR)]
    now = rendered.render_targets(desired)
    planned = rendered.render_targets(after_surges(desired, actions))
    findings = [
        _finding(
            seen.host,
            f"{seen.folder}/{name}",
            f"Prometheus's target file {_drift(seen.files.get(name))}",
        )
        for name, text in sorted(now.items())
        if seen.files.get(name) != text
    ]
    writes = [
        Action(
            kind=ActionKind.WRITE_TARGETS,
            target=name,
            host=monitoring.host,
            reasons=(f"{seen.folder}/{name} " + _drift(seen.files.get(name)),),
            changes=tuple(changes(name, seen.files.get(name), text)),
        )
        for name, text in sorted(planned.items())
        if seen.files.get(name) != text
    ]
    if rendered.credentials_reference(desired) is not None and not seen.credentials:
        writes.append(
            Action(
                kind=ActionKind.WRITE_TARGETS,
                target=rendered.CREDENTIALS,
                host=monitoring.host,
                reasons=("the gateway's scrape credentials, from the environment: missing",),
            )
        )
    return writes, findings


def changes(name: str, old: str | None, new: str) -> list[FieldChange]:
    """A target file's changes, target by target (`seat coder: A:8030 -> A:9030`)."""
    if not name.endswith(".json"):
        return []
    before, after = rendered.describe(old), rendered.describe(new)
    return [
        FieldChange(field=key, old=before.get(key, "none"), new=after.get(key, "none"))
        for key in sorted(before.keys() | after.keys())
        if before.get(key) != after.get(key)
    ]


def _drift(text: str | None) -> str:
    return "is missing" if text is None else "differs from desired/"


def _finding(host: str, path: str, message: str, severity: Severity = Severity.WARNING) -> Finding:
    return Finding(
        kind=FindingKind.TARGETS_DRIFT,
        target=f"{host}:{path}",
        message=message,
        severity=severity,
    )
