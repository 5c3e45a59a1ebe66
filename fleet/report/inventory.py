"""The inventory: what is deployed, derived from facts only, as data.

`build_inventory` turns an `Observation` (plus desired/ for names and bands) into an
`Inventory`; `fleet.report.inventory_text` prints it as Markdown or JSON. Volatile facts (pids,
start times, restart counts) are left out so that two generations from the same fleet are
identical but for the timestamp, which is what `fleet check` relies on.
"""

from __future__ import annotations

from pydantic import Field

from fleet.base import CoreModel
from fleet.observed.bench import BenchRecord
from fleet.observed.findings import Finding, find_issues
from fleet.observed.models import Observation, ObservedHost, ObservedSeat
from fleet.report.measured import MeasuredRow, measured_rows
from fleet.secrets import redact_url
from fleet.spec.models import DesiredFleet

Routes = dict[tuple[str, int | None], list[str]]  # (address, port) -> aliases routed there


class SeatRow(CoreModel):
    """One seat as the inventory lists it."""

    seat: str
    managed: bool
    state: str
    gpus: tuple[int, ...]
    model: str | None
    served_names: tuple[str, ...]
    architecture: str | None = None
    layers: int | None = None
    experts: str | None = None
    quantization: str | None = None
    weights_gib: float | None = None
    kv_cache_tokens: int | None = None
    context: int | None = None
    concurrency: float | None = None
    vram_mib: int = 0
    speculative: str | None = None
    image: str
    image_id: str
    digest: str | None = None
    aliases: tuple[str, ...] = ()
    lineage: str | None = None
    port: int | None = None


class GpuRow(CoreModel):
    """One GPU with its memory and the seats on it."""

    index: int
    name: str
    uuid: str
    memory_total_mib: int
    memory_used_mib: int
    seats: tuple[str, ...] = ()


class HostSection(CoreModel):
    """One host of the inventory."""

    name: str
    reachable: bool
    error: str | None = None
    gpus: tuple[GpuRow, ...] = ()
    seats: tuple[SeatRow, ...] = ()


class AliasRow(CoreModel):
    """One gateway alias: where it routes and whether that answers."""

    alias: str
    api_base: str | None
    model: str | None
    seat: str | None
    managed: bool
    answers: bool | None
    serves: tuple[str, ...] = ()


class ClientRow(CoreModel):
    """One gateway client: the aliases its key opens at the gateway, where its key lives,
    and whether what is there is a key the gateway holds (never the key, nor its hash)."""

    client: str
    aliases: tuple[str, ...] = Field(description="as the gateway's key file holds them")
    keys: int = Field(description="how many keys the gateway holds for it (2 mid-rotation)")
    issued: str | None = None
    where: str = Field(description="host:file VARIABLE, or manual")
    delivered: str = Field(description="matches, differs, missing, unreachable or manual")


class Inventory(CoreModel):
    """The whole document's facts."""

    fleet: str
    generated_at: str
    live_commit: str | None = None
    hosts: tuple[HostSection, ...] = ()
    aliases: tuple[AliasRow, ...] = ()
    clients: tuple[ClientRow, ...] = ()
    findings: tuple[Finding, ...] = Field(())
    measured: tuple[MeasuredRow, ...] = ()


def build_inventory(
    desired: DesiredFleet, observation: Observation, bench: BenchRecord | None = None
) -> Inventory:
    """The inventory of the observed fleet (and its bench record), sorted throughout."""
    routes = _routes(desired, observation)
    hosts = tuple(
        _host_section(observation.hosts[name], routes, _addresses(desired, name))
        for name in sorted(observation.hosts)
    )
    return Inventory(
        fleet=desired.settings.name,
        generated_at=observation.observed_at,
        live_commit=observation.live_commit,
        hosts=hosts,
        aliases=_alias_rows(desired, observation),
        clients=client_rows(desired, observation),
        findings=tuple(find_issues(desired, observation)),
        measured=measured_rows(observation, bench),
    )


def _routes(desired: DesiredFleet, observation: Observation) -> Routes:
    """(address, port) -> aliases the gateway routes there, indexed once for every seat."""
    routes: Routes = {}
    config = observation.gateway.config if observation.gateway else None
    for entry in config.entries if config else ():
        routes.setdefault(_endpoint(entry.address or ""), []).append(entry.alias)
    return routes


def _host_section(host: ObservedHost, routes: Routes, addresses: set[str]) -> HostSection:
    seats = tuple(
        _seat_row(host, seat, routes, addresses)
        for seat in sorted(host.seats, key=lambda s: s.name)
    )
    gpus = tuple(
        GpuRow(
            index=g.index,
            name=g.name,
            uuid=g.uuid,
            memory_total_mib=g.memory_total_mib,
            memory_used_mib=g.memory_used_mib,
            seats=tuple(s.seat for s in seats if g.index in s.gpus),
        )
        for g in sorted(host.gpus, key=lambda g: g.index)
    )
    return HostSection(
        name=host.name, reachable=host.reachable, error=host.error, gpus=gpus, seats=seats
    )


def _seat_row(
    host: ObservedHost, seat: ObservedSeat, routes: Routes, addresses: set[str]
) -> SeatRow:
    info = host.models.get((seat.model or "").rstrip("/"))
    engine = seat.engine
    concurrency = seat.concurrency
    return SeatRow(
        seat=seat.name,
        managed=seat.managed,
        state=seat.instance.state,
        gpus=seat.gpus,
        model=seat.model,
        served_names=seat.served_names,
        architecture=info.architecture if info else None,
        layers=info.num_layers if info else None,
        experts=_experts(info.num_experts, info.num_experts_per_token) if info else None,
        quantization=info.quantization if info else None,
        weights_gib=engine.weights_gib if engine else None,
        kv_cache_tokens=engine.kv_cache_tokens if engine else None,
        context=seat.max_model_len or (engine.max_model_len if engine else None),
        concurrency=round(concurrency, 2) if concurrency is not None else None,
        vram_mib=seat.vram_mib,
        speculative=_speculative(seat),
        image=seat.instance.image,
        image_id=seat.instance.image_id,
        digest=seat.instance.repo_digests[0] if seat.instance.repo_digests else None,
        aliases=tuple(sorted(_aliases_for(seat, routes, addresses))),
        lineage=_lineage(info.lineage) if info else None,
        port=seat.port,
    )


def _aliases_for(seat: ObservedSeat, routes: Routes, addresses: set[str]) -> list[str]:
    """Aliases whose backend is this seat's port on one of its host's addresses."""
    if seat.port is None:
        return []
    return [alias for address in addresses for alias in routes.get((address, seat.port), ())]


def _endpoint(api_base: str) -> tuple[str, int | None]:
    netloc = api_base.split("://", 1)[-1].split("/", 1)[0]
    address, _, port = netloc.rpartition(":")
    return (address, int(port)) if port.isdigit() else (netloc, None)


def _addresses(desired: DesiredFleet, host: str) -> set[str]:
    spec = desired.hosts.get(host)
    names = {host} | ({spec.address, spec.publish_address} if spec else set())
    return names - {"0.0.0.0"}


def _experts(total: int | None, active: int | None) -> str | None:
    if not total:
        return None
    return f"{total} ({active} active)" if active else str(total)


def _speculative(seat: ObservedSeat) -> str | None:
    spec = seat.speculative or {}
    if not spec.get("method"):
        return None
    return f"{spec['method']} k={spec.get('num_speculative_tokens', '?')}"


def _lineage(lineage: dict[str, str]) -> str | None:
    if not lineage:
        return None
    return "; ".join(f"{k}: {v}" for k, v in sorted(lineage.items()))


def _alias_rows(desired: DesiredFleet, observation: Observation) -> tuple[AliasRow, ...]:
    gateway = observation.gateway
    if gateway is None or gateway.config is None:
        return ()
    rows = []
    for entry in sorted(gateway.config.entries, key=lambda e: (e.alias, e.address or "")):
        probe = gateway.probes.get(entry.address or "")
        rows.append(
            AliasRow(
                alias=entry.alias,
                api_base=redact_url(entry.address) if entry.address else None,
                model=entry.model,
                seat=entry.seat,
                managed=entry.managed,
                answers=probe.answers if probe else None,
                serves=probe.models if probe else (),
            )
        )
    return tuple(rows)


def client_rows(desired: DesiredFleet, observation: Observation) -> tuple[ClientRow, ...]:
    """Each client the gateway's key file holds or desired/ declares."""
    live = observation.gateway
    if live is None or live.keys is None or live.keys.file is None:
        return ()
    held = live.keys.file.clients
    declared = desired.gateway.clients if desired.gateway else {}
    rows = []
    for name in sorted(set(held) | set(declared)):
        entry, client = held.get(name), declared.get(name)
        seen = observation.clients.get(name)
        if client is None or client.manual:
            state = "manual" if client is not None else "not declared"
        elif seen is None or not seen.reachable:
            state = "unreachable"
        elif seen.delivered is None:
            state = "missing"
        else:
            state = "matches" if entry and seen.delivered in entry.hashes else "differs"
        rows.append(
            ClientRow(
                client=name,
                aliases=entry.aliases if entry else (),
                keys=len(entry.hashes) if entry else 0,
                issued=entry.issued if entry else None,
                where=client.where() if client else "—",
                delivered=state,
            )
        )
    return tuple(rows)
