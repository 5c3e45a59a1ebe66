"""`fleet import`: observe hosts that already run engines and write desired/ for them.

Read-only on the hosts, as inventory is: one fact script per host and, with a gateway,
one SFTP read of its LiteLLM config. Hosts are named by their ssh_config aliases; the
files come from `fleet.render.desired_files`, and are checked by the same loader and
validator as any desired/ before they are written. A host where its default runtime (Docker
compose) does not answer is observed again under each other runtime (systemd units).
"""

from __future__ import annotations

from pathlib import Path

from fleet.errors import FleetError
from fleet.observed.models import Observation
from fleet.render.desired_files import HostAccess, ImportResult, import_fleet
from fleet.runtimes import RUNTIMES, validate_fleet
from fleet.spec.load import load_fleet
from fleet.spec.models import DesiredFleet, Host, HostSsh
from fleet.spec.problems import Problem, Severity
from reconciler.adapters.connections import Connections
from reconciler.adapters.ssh import resolve_target, ssh_config_path
from reconciler.workflows.observe import observe_fleet


def with_runtime(host: Host, runtime: str) -> Host:
    """The host as one that runs its seats under `runtime` (with its default settings)."""
    neutral = host.model_dump(exclude={"settings", "runtime"})
    return Host.model_validate({**neutral, "runtime": runtime})


def fleet_of(aliases: list[str], ssh_config: Path | None) -> DesiredFleet:
    """A desired fleet of bare hosts (no seats), to observe what runs on them."""
    hosts = {}
    for alias in aliases:
        bare = Host(name=alias, ssh=HostSsh(alias=alias), address=alias)
        address = resolve_target(bare, ssh_config).hostname
        hosts[alias] = bare.model_copy(update={"address": address})
    return DesiredFleet(hosts=hosts)


def import_hosts(
    aliases: list[str], gateway: tuple[str, str] | None, ssh_config: Path | None = None
) -> tuple[ImportResult, list[Problem]]:
    """The desired/ files for what runs on the hosts, and what validation says of them."""
    config = ssh_config or ssh_config_path()
    names = sorted(set(aliases) | ({gateway[0]} if gateway else set()))
    if not names:
        raise FleetError("name at least one host: fleet import --host NAME")
    bare = fleet_of(names, config)
    with Connections(bare, config) as connections:
        observation = observe_fleet(bare, connections)
        observation = _under_other_runtimes(bare, connections, observation)
        text = None
        if gateway is not None:
            text = connections.get(gateway[0]).read_file(gateway[1])
            if text is None:
                raise FleetError(f"{gateway[1]} does not exist on {gateway[0]}", where=gateway[0])
    access = {n: HostAccess(alias=n, address=h.address) for n, h in bare.hosts.items()}
    result = import_fleet(observation, access, (*gateway, text) if gateway else None)
    return result, validate_files(result.files)


def _under_other_runtimes(
    bare: DesiredFleet, connections: Connections, observation: Observation
) -> Observation:
    """Hosts whose runtime (the default one) does not answer, observed again under each
    other registered runtime in turn (kept under the first that answers there)."""
    for name in RUNTIMES:
        silent = [
            n
            for n, h in observation.hosts.items()
            if h.reachable and h.runtime_error and h.runtime != name
        ]
        if not silent:
            continue
        hosts = {n: with_runtime(h, name) if n in silent else h for n, h in bare.hosts.items()}
        again = observe_fleet(bare.model_copy(update={"hosts": hosts}), connections, silent)
        found = {n: h for n, h in again.hosts.items() if h.reachable and not h.runtime_error}
        observation = observation.model_copy(update={"hosts": {**observation.hosts, **found}})
    return observation


def validate_files(files: dict[str, str]) -> list[Problem]:
    """The loader's and validator's problems with the files import would write."""
    return validate_fleet(load_fleet(files))


def write_files(out: Path, files: dict[str, str], *, force: bool) -> list[Path]:
    """Write the files under `out`; refuse to overwrite an existing desired/ unless forced."""
    if out.exists() and any(out.iterdir()) and not force:
        raise FleetError(f"{out} is not empty: choose another --out, or pass --force")
    written = []
    for rel, text in sorted(files.items()):
        path = out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written


def errors(problems: list[Problem]) -> list[Problem]:
    """Only the problems that block."""
    return [p for p in problems if p.severity is Severity.ERROR]
