"""Read an apply journal: the JSON-lines file of steps an apply completed on a host.

Written by `reconciler.workflows.locks.record`; read here (pure) so that `fleet plan` and the
inventory can say that an apply was interrupted and which of its steps were done, which
desired/ commit the last finished apply made live, how long the gateway's last
in-place restart took and how long each seat's last start took (plan says what the next
one will cost).
"""

from __future__ import annotations

import json


def _entries(journal_text: str | None) -> list[dict[str, str]]:
    entries = []
    for line in (journal_text or "").splitlines():
        try:
            entry = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(entry, dict):
            entries.append({str(k): str(v) for k, v in entry.items()})
    return entries


def last_applied(journal_text: str | None) -> tuple[str, str] | None:
    """(desired/ commit, time) of the last apply that finished and said its commit."""
    for entry in reversed(_entries(journal_text)):
        if entry.get("step") == "finished" and entry.get("commit"):
            return entry["commit"], entry.get("at", "")
    return None


def unfinished(journal_text: str | None) -> list[dict[str, str]]:
    """The steps of the last apply if it never finished (no `finished` or `rolled-back`)."""
    steps: list[dict[str, str]] = []
    for entry in _entries(journal_text):
        if entry.get("step") == "begin":
            steps = [entry]
        elif steps:
            steps.append(entry)
    if steps and steps[-1].get("step") not in ("finished", "rolled-back"):
        return steps
    return []


def last_gateway_restart(journal_text: str | None) -> float | None:
    """Seconds the last in-place gateway restart took (its `gateway` step), if recorded."""
    for entry in reversed(_entries(journal_text)):
        if entry.get("step") == "gateway" and entry.get("how") == "in-place":
            try:
                return float(entry.get("seconds", ""))
            except ValueError:
                return None
    return None


SEAT_STARTS = ("create-seat", "replace-seat", "surge-seat")


def last_seat_starts(journal_text: str | None) -> dict[str, float]:
    """Seat -> seconds its last recorded start took (start to healthy), newest wins."""
    found: dict[str, float] = {}
    for entry in _entries(journal_text):
        if entry.get("step") in SEAT_STARTS and entry.get("target") and entry.get("seconds"):
            try:
                found[entry["target"]] = float(entry["seconds"])
            except ValueError:
                continue
    return found
