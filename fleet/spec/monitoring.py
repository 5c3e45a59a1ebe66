"""What desired/ says about monitoring: fleet.yaml's `monitoring:` (the host whose
Prometheus reads fleet's target files, the folder its `file_sd_configs` reads, where
`fleet reconcile --listen` answers, the gateway's scrape credentials) and a host file's
`exporters:` (node exporter, DCGM exporter: port and path).

Read by `fleet.spec.models` (the fields), `fleet.spec.validate` (`check_monitoring`:
the host exists, ports are a host's own) and `fleet.render.targets` (the files apply writes).
"""

from collections.abc import Iterator
from typing import TYPE_CHECKING

from pydantic import Field

from fleet.base import CoreModel
from fleet.spec.problems import Problem

if TYPE_CHECKING:
    from fleet.spec.load import Sources
    from fleet.spec.models import DesiredFleet

REFERENCE = r"^\$\{[A-Za-z_][A-Za-z0-9_]*\}$"


class Exporter(CoreModel):
    """A metrics exporter a host runs beside its seats (node exporter, DCGM exporter)."""

    port: int = Field(ge=1, le=65535, description="Port it listens on, at the host's address.")
    path: str = Field("/metrics", pattern=r"^/[!-~]*$", description="Its metrics path.")


class Monitoring(CoreModel):
    """fleet.yaml `monitoring:`: apply keeps Prometheus's targets in step with the seats."""

    host: str = Field(description="The host (in desired/hosts) whose Prometheus reads the files.")
    targets_dir: str = Field(
        pattern=r"^/[A-Za-z0-9._/-]*$",
        description="Absolute folder of the files its file_sd_configs read; fleet owns the "
        "files named fleet-*.",
    )
    fleet_target: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9.:\[\]-]+:[0-9]{1,5}$",
        description="HOST:PORT where Prometheus reaches `fleet reconcile --listen`.",
    )
    gateway_credentials: str | None = Field(
        None,
        pattern=REFERENCE,
        description="A ${ENV_VAR} holding the bearer token for the gateway's /metrics "
        "[the gateway's master_key].",
    )


def check_monitoring(desired: "DesiredFleet", src: "Sources") -> Iterator[Problem]:
    """The monitoring host exists; an exporter's port is not a seat's port on its host."""
    monitoring = desired.settings.monitoring
    if monitoring is not None and monitoring.host not in desired.hosts:
        yield src.problem(
            "fleet.yaml",
            ("monitoring", "host"),
            f"host {monitoring.host!r} is not in desired/hosts "
            f"(known: {', '.join(sorted(desired.hosts)) or 'none'})",
        )
    for host in sorted(desired.hosts.values(), key=lambda h: h.name):
        taken = {p for s in desired.seats_on(host.name) for p in (s.port, s.second_port)}
        seen: dict[int, str] = {}
        for name, exporter in sorted(host.exporters.items()):
            where = ("exporters", name, "port")
            if exporter.port in taken:
                yield src.problem(
                    f"hosts/{host.name}.yaml", where, f"port {exporter.port} is a seat's port"
                )
            elif (other := seen.setdefault(exporter.port, name)) != name:
                yield src.problem(
                    f"hosts/{host.name}.yaml",
                    where,
                    f"exporter {other!r} has port {exporter.port} too",
                )
