"""Prometheus's target files on the monitoring host: read them (observe) and write them
(apply's last wave), through the host's session.

Each file is replaced atomically (`HostSession.write_file_atomic`: a temporary file,
then a rename), so Prometheus's file-based discovery, which watches the folder, sees the
old list or the new, never a part, and needs no reload. The gateway's bearer token is
read from the environment (`${VAR}`) at apply time and written to a file only the
owner reads; it never reaches an observation, a plan or a report.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from fleet.errors import ApplyError, FleetError
from fleet.observed.targets import ObservedTargets
from fleet.render import targets as rendered
from fleet.spec.models import DesiredFleet
from reconciler.adapters import environment
from reconciler.host import Sessions

if TYPE_CHECKING:  # observe needs none of apply's machinery (ruamel among it)
    from reconciler.workflows.wave_run import Reporter


def observe_targets(desired: DesiredFleet, connections: Sessions) -> ObservedTargets | None:
    """The files fleet keeps in targets_dir, as they are (None: no monitoring declared)."""
    monitoring = desired.settings.monitoring
    if monitoring is None:
        return None
    folder = monitoring.targets_dir.rstrip("/")
    seen = ObservedTargets(host=monitoring.host, folder=folder)
    try:
        conn = connections.get(monitoring.host)
        names = rendered.render_targets(desired)
        files = {name: conn.read_file(f"{folder}/{name}") for name in names}
        has_key = conn.read_file(f"{folder}/{rendered.CREDENTIALS}") is not None
    except FleetError as err:
        return seen.model_copy(update={"error": err.message})
    return seen.model_copy(update={"files": files, "credentials": has_key})


def gateway_token(desired: DesiredFleet) -> str | None:
    """The gateway's bearer token from the environment; ApplyError if its variable is unset."""
    reference = rendered.credentials_reference(desired)
    if reference is None:
        return None
    what = "the gateway's scrape credentials"
    return environment.resolve(reference, what, what, ApplyError)


def write_targets(desired: DesiredFleet, connections: Sessions, reporter: Reporter) -> list[str]:
    """Write every target file that differs from desired/ (seats on their live ports);
    the files written."""
    monitoring = desired.settings.monitoring
    if monitoring is None:
        return []
    folder = monitoring.targets_dir.rstrip("/")
    conn = connections.get(monitoring.host)
    token = gateway_token(desired)
    conn.check(shlex.join(["mkdir", "-p", folder]))
    written: list[str] = []
    for name, text in sorted(rendered.render_targets(desired).items()):
        path = f"{folder}/{name}"
        if conn.read_file(path) != text:
            reporter.step(f"{monitoring.host}: write {path}")
            conn.write_file_atomic(path, text, 0o644)
            written.append(f"write targets {name}")
    key_path = f"{folder}/{rendered.CREDENTIALS}"
    if token is not None and conn.read_file(key_path) != token + "\n":
        reporter.step(f"{monitoring.host}: write {key_path} (from the environment)")
        conn.write_file_atomic(key_path, token + "\n", 0o640)
        written.append(f"write targets {rendered.CREDENTIALS}")
    return written
