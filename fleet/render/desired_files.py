"""What `fleet import` writes: desired/ files for a fleet that already runs.

Pure: an `Observation` of hosts fleet did not set up (and their gateway config) in, file
texts out (`fleet.yaml`, `hosts/<host>.yaml`, `seats/<seat>.yaml`, `gateway.yaml`). Each
value carries a comment naming where it was read; what import cannot express becomes a
comment too, so nothing is dropped silently. Secrets arrive already replaced by `${NAME}`
(`fleet.facts.docker_inspect`); the variables they name are listed for the operator.
The engine-specific reading is `fleet.render.imported_seat`.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass, field

from fleet.gateways import default_kind
from fleet.observed.models import Observation, ObservedHost
from fleet.render.imported_seat import ImportedSeat, import_seat, seat_name
from fleet.runtimes import runtime_for

HEADER = "# Imported by `fleet import` from what runs on {where}. Review, then commit.\n"


@dataclass(frozen=True)
class HostAccess:
    """How the operator reaches a host: the ssh_config alias and the address it resolves to."""

    alias: str
    address: str


@dataclass
class ImportResult:
    """The files to write, the `${VAR}` names the operator must set, and what needs a look."""

    files: dict[str, str] = field(default_factory=dict)
    variables: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def scalar(value: object) -> str:
    """A YAML scalar for a value (JSON's spelling is valid YAML)."""
    return json.dumps(value)


def line(key: str, value: object, source: str) -> str:
    """`key: value  # source`."""
    return f"{key}: {scalar(value)}  # {source}\n"


def import_fleet(
    observation: Observation,
    access: dict[str, HostAccess],
    gateway: tuple[str, str, str | None] | None = None,
) -> ImportResult:
    """Every file of desired/ for the observed hosts; `gateway` is (host, path, config text)."""
    result = ImportResult()
    result.files["fleet.yaml"] = (
        HEADER.format(where=", ".join(sorted(observation.hosts)))
        + "name: imported\nimages: {digest: warn}\n"
    )
    seats: list[ImportedSeat] = []
    taken: set[str] = set()
    for name in sorted(observation.hosts):
        host = observation.hosts[name]
        if not host.reachable:
            result.notes.append(f"{name}: not imported, unreachable: {host.error}")
            continue
        result.files[f"hosts/{name}.yaml"] = host_file(host, access[name])
        for live in host.seats:
            if live.engine_name is None:
                continue
            seat = import_seat(host, live, seat_name(live, host.name, taken))
            taken.add(seat.name)
            seats.append(seat)
    if gateway is not None:
        proxy = gateway[0]
        address = access[proxy].address if proxy in access else proxy
        where = seat_addresses(seats, access, observation)
        text, aliases = default_kind().imported_file(gateway, address, where, observation)
        result.files["gateway.yaml"] = text
        seats = [s.with_aliases(aliases.get(s.name, ())) for s in seats]
    for seat in seats:
        result.files[f"seats/{seat.name}.yaml"] = seat.text()
        result.variables += seat.variables
        result.notes += [f"{seat.name}: {note}" for note in seat.notes]
    result.variables = sorted(set(result.variables))
    return result


def seat_addresses(
    seats: list[ImportedSeat], access: dict[str, HostAccess], observation: Observation
) -> dict[tuple[str, int], str]:
    """(address, port) -> the imported seat that answers there (its host's address, and
    every address its ports are published on)."""
    where: dict[tuple[str, int], str] = {}
    for seat in seats:
        values = {key: value for key, value, _ in seat.lines}
        host = str(values["host"])
        port = int(str(values["port"]))
        for address in {access[host].address, *_published(observation, host)}:
            where[(address, port)] = seat.name
    return where


def _published(observation: Observation, host: str) -> set[str]:
    seats = observation.hosts[host].seats if host in observation.hosts else ()
    return {p.split(":")[0] for s in seats for p in s.instance.ports if p}


def host_file(host: ObservedHost, access: HostAccess) -> str:
    """hosts/<host>.yaml: SSH as given, the address, GPUs from nvidia-smi, where things live."""
    text = HEADER.format(where=host.name)
    text += f"ssh:\n  alias: {scalar(access.alias)}  # as given to fleet import\n"
    text += line("address", access.address, "the address ssh_config resolves the alias to")
    published = sorted({p.split(":")[0] for s in host.seats for p in s.instance.ports if p})
    if len(published) == 1 and published[0] not in ("", "0.0.0.0"):
        text += line("publish_address", published[0], "where the engines' ports are published")
    if host.gpus:
        text += "gpus:  # nvidia-smi --query-gpu\n"
        for gpu in host.gpus:
            text += f"  - {{index: {gpu.index}, name: {scalar(gpu.name)}, "
            text += f"memory: {gpu.memory_total_mib}MiB}}\n"
    else:
        text += "gpus: []  # nvidia-smi reports no GPU: a CPU-only host\n"
    engines = tuple(s.instance for s in host.seats if s.engine_name)
    for key, value, source in runtime_for(host.runtime or "").import_lines(engines):
        text += line(key, value, source)
    text += line("models_root", _models_root(host), "the common parent of the model paths")
    return text


def _models_root(host: ObservedHost) -> str:
    paths = [p for p in host.models] or [s.model for s in host.seats if s.engine_name and s.model]
    parents = {posixpath.dirname(p.rstrip("/")) for p in paths if p}
    return parents.pop() if len(parents) == 1 else "/models"
