"""`fleet models` and `fleet models prune`: the weights on every host, and freeing them.

Listing observes the hosts (the same fact script as plan) and hands the observation to
`fleet.report.models`. Prune removes the models `fleet.report.models.prune_candidates`
chose, each host under its apply lock (so no apply fetches or starts a seat there
meanwhile), each model with the provenance file beside it, and records it in the host's
journal. A model named with `--model` that something uses, or that is outside the host's
models root, is refused before anything is removed.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable

from fleet.errors import FleetError
from fleet.names import PROVENANCE_SUFFIX
from fleet.observed.model_use import users
from fleet.observed.models import Observation
from fleet.report.models import ModelRow, within_root
from fleet.spec.models import DesiredFleet
from reconciler.host import Sessions
from reconciler.workflows import locks


def check_named(
    desired: DesiredFleet, observation: Observation, host: str, paths: list[str]
) -> None:
    """FleetError naming why one of these models on `host` must not be pruned."""
    spec, seen = desired.hosts.get(host), observation.hosts.get(host)
    if spec is None or seen is None:
        raise FleetError(f"no host {host!r} in desired/hosts")
    for path in paths:
        if not within_root(spec.models_root, path):
            raise FleetError(
                f"refusing to prune {path} on {host}: not an entry of its models root "
                f"{spec.models_root}"
            )
        if path.rstrip("/") not in seen.models:
            raise FleetError(f"no model {path} on {host}")
        if using := users(desired, seen, path):
            raise FleetError(f"refusing to prune {path} on {host}: seat {', '.join(using)} uses it")


def prune(
    desired: DesiredFleet,
    connections: Sessions,
    rows: list[ModelRow],
    say: Callable[[str], None],
) -> list[str]:
    """Remove these models (and their provenance), host by host under its lock."""
    removed = []
    for host in sorted({row.host for row in rows}):
        conn, spec = connections.get(host), desired.hosts[host]
        locks.acquire(conn, spec)
        try:
            for row in (r for r in rows if r.host == host):
                words = ["rm", "-rf", "--", row.path, row.path + PROVENANCE_SUFFIX]
                conn.check(shlex.join(words))
                locks.record(conn, spec, "model-pruned", model=row.path)
                removed.append(f"{host}:{row.path}")
                say(f"removed {row.path} on {host}")
        finally:
            locks.release(conn, spec)
    return removed
