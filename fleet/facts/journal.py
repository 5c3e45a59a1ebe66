"""Read an apply journal: the JSON-lines file of steps an apply completed on a host.

Written by `reconciler.workflows.locks.record`; read here (pure) so that `fleet plan` and the
inventory can say that an apply was interrupted and which of its steps were done.
"""

from __future__ import annotations

import json


def unfinished(journal_text: str | None) -> list[dict[str, str]]:
    """The steps of the last apply if it never finished (no `finished` or `rolled-back`)."""
    steps: list[dict[str, str]] = []
    for line in (journal_text or "").splitlines():
        try:
            entry = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            continue
        if not isinstance(entry, dict):
            continue
        entry = {str(k): str(v) for k, v in entry.items()}
        if entry.get("step") == "begin":
            steps = [entry]
        elif steps:
            steps.append(entry)
    if steps and steps[-1].get("step") not in ("finished", "rolled-back"):
        return steps
    return []
