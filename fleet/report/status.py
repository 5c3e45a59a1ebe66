"""`fleet status`: the live fleet at a glance, as data (the operators' `list`).

Pure: `build_status` takes desired/, one observation (with the engines' gauges, read in
the same round trip per host), the plan made from it, and the bench record, and returns a
`FleetStatus`: per host and GPU the memory in use and the seats on it, each seat's state,
live port, running and waiting requests, KV cache in use, concurrency against its band,
its newest bench result against its baseline with the warning level, its aliases; the
gateway's aliases; the open findings (plan's, and a regressed seat's bench); the desired/
commit, the live one and the last apply. `fleet.report.status_text` prints it in a
terminal, `fleet.report.dashboard` as a web page; `fleet status --json` is its
`model_dump` (`fleet schema status`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import Field

from fleet.base import CoreModel
from fleet.facts.engine_metrics import EngineLoad
from fleet.names import HASH_LABEL
from fleet.observed.bench import (
    BenchRecord,
    BenchResult,
    against_committed,
    baseline_of,
    regression_finding,
)
from fleet.observed.findings import Finding
from fleet.observed.models import Observation
from fleet.plan.live_port import follow_live_ports
from fleet.plan.plan import Plan
from fleet.report.inventory import AliasRow, HostSection, SeatRow, build_inventory, client_rows
from fleet.spec.models import DesiredFleet


class BenchStatus(CoreModel):
    """A seat's newest measurement against its committed baseline."""

    date: str
    via: str
    decode_tok_s: float | None = None
    baseline_tok_s: float | None = None
    ratio: float | None = Field(None, description="decode median / the baseline's")
    level: str = Field(description="baseline, ok, warning (>= 30% below), critical (>= 50%)")
    stale: bool = Field(False, description="the seat's spec hash or image changed since")


class SeatStatus(CoreModel):
    """One seat as it runs now."""

    seat: str
    host: str
    managed: bool
    state: str
    in_sync: bool = Field(description="plan has nothing to do for it")
    port: int | None = Field(None, description="the live port (a surge alternates it)")
    gpus: tuple[int, ...] = ()
    model: str | None = None
    served_names: tuple[str, ...] = ()
    vram_mib: int = 0
    running: float | None = Field(None, description="requests running (the engine's gauge)")
    waiting: float | None = Field(None, description="requests waiting (the engine's gauge)")
    kv_usage: float | None = Field(None, description="KV cache in use now, 0 to 1")
    kv_cache_tokens: int | None = None
    context: int | None = None
    concurrency: float | None = Field(None, description="max concurrency at its context")
    band: tuple[float, float] | None = Field(None, description="its concurrency band")
    in_band: bool | None = None
    aliases: tuple[str, ...] = ()
    bench: BenchStatus | None = None


class GpuStatus(CoreModel):
    """One GPU: its memory in use and the seats on it."""

    index: int
    name: str
    memory_total_mib: int
    memory_used_mib: int
    seats: tuple[str, ...] = ()


class HostStatus(CoreModel):
    """One host: its GPUs and seats, and the last apply it journaled."""

    name: str
    reachable: bool
    error: str | None = None
    gpus: tuple[GpuStatus, ...] = ()
    seats: tuple[SeatStatus, ...] = ()
    applied_commit: str | None = None
    applied_at: str | None = None


class ClientStatus(CoreModel):
    """A gateway client: the aliases it may use, where its key lives and whether the key
    delivered there is one the gateway holds (never the key, nor its hash)."""

    name: str
    aliases: tuple[str, ...] = Field((), description='its aliases; ("*",) for every alias')
    where: str = Field("manual", description="host:file VARIABLE, or manual")
    keys: int = Field(0, description="how many keys of it the gateway's key file holds")
    delivered: str = Field(
        "unknown",
        description="matches, differs, missing, unreachable, manual, not declared, unknown",
    )


class FleetStatus(CoreModel):
    """The whole fleet at a glance (`fleet status --json`)."""

    fleet: str
    observed_at: str
    desired_commit: str | None = None
    live_commit: str | None = None
    last_apply: str | None = Field(None, description="when the newest apply finished")
    pending: tuple[str, ...] = Field((), description="plan's actions, one line each")
    drift: tuple[str, ...] = Field((), description="live vs the committed inventory")
    hosts: tuple[HostStatus, ...] = ()
    aliases: tuple[AliasRow, ...] = ()
    clients: tuple[ClientStatus, ...] = ()
    findings: tuple[Finding, ...] = ()


def seat_loads(observation: Observation) -> dict[str, EngineLoad]:
    """Each running seat's engine gauges, read on its live port (`ObservedHost.loads`)."""
    loads: dict[str, EngineLoad] = {}
    for host in observation.hosts.values():
        for seat in host.seats:
            load = host.loads.get(seat.port) if seat.port is not None else None
            if seat.managed and seat.instance.running and load is not None:
                loads.setdefault(seat.name, load)
    return loads


def build_status(
    desired: DesiredFleet,
    observation: Observation,
    plan: Plan,
    loads: Mapping[str, EngineLoad],
    bench: BenchRecord,
    measured: Mapping[str, BenchResult] | None = None,
    findings: Sequence[Finding] = (),
) -> FleetStatus:
    """The status of the observed fleet; `measured` and `findings`: the reconcile loop's
    own bench results and their findings, newer than the committed record."""
    inventory = build_inventory(follow_live_ports(desired, observation), observation)
    changing = {a.target for a in plan.actions}
    newest = {**{r.seat: r for r in bench.results}, **(measured or {})}
    hosts = tuple(
        _host(desired, observation, section, changing, loads, newest, bench)
        for section in inventory.hosts
    )
    applied = [h for h in hosts if h.applied_at]
    judged = (
        r if r.baseline_ratio is not None else against_committed(r, bench)
        for r in newest.values()
        if r.seat in desired.seats
    )
    regressions = [f for r in judged if (f := regression_finding(r)) is not None]
    return FleetStatus(
        fleet=desired.settings.name,
        observed_at=observation.observed_at,
        desired_commit=plan.desired_commit,
        live_commit=observation.live_commit,
        last_apply=max((h.applied_at or "" for h in applied), default=None),
        pending=tuple(f"{a.kind.value} {a.target} on {a.host}" for a in plan.actions),
        drift=plan.drift,
        hosts=hosts,
        aliases=inventory.aliases,
        clients=_clients(desired, observation),
        findings=tuple(sorted({*plan.findings, *findings, *regressions}, key=_finding_order)),
    )


def _finding_order(finding: Finding) -> tuple[str, str, str]:
    return (finding.kind.value, finding.target, finding.message)


def _clients(desired: DesiredFleet, observation: Observation) -> tuple[ClientStatus, ...]:
    """Each client desired/ declares or the gateway's key file holds, as the inventory
    reads them; declared clients only while the key file was not read."""
    rows = {row.client: row for row in client_rows(desired, observation)}
    declared = desired.gateway.clients if desired.gateway else {}
    out = [
        ClientStatus(
            name=name,
            aliases=row.aliases if row.keys or name not in declared else declared[name].allowed(),
            where=row.where,
            keys=row.keys,
            delivered=row.delivered,
        )
        for name, row in rows.items()
    ]
    out += [
        ClientStatus(name=name, aliases=client.allowed(), where=client.where())
        for name, client in declared.items()
        if name not in rows
    ]
    return tuple(sorted(out, key=lambda c: c.name))


def _host(
    desired: DesiredFleet,
    observation: Observation,
    section: HostSection,
    changing: set[str],
    loads: Mapping[str, EngineLoad],
    newest: Mapping[str, BenchResult],
    bench: BenchRecord,
) -> HostStatus:
    observed = observation.hosts[section.name]
    seats = tuple(
        _seat(desired, section.name, row, row.seat in changing, loads, newest, bench)
        for row in section.seats
    )
    hashes = {s.name: s.instance.labels.get(HASH_LABEL) for s in observed.seats if s.managed}
    seats = tuple(
        s.model_copy(update={"bench": _stale(s.bench, newest[s.seat], hashes.get(s.seat))})
        if s.bench is not None
        else s
        for s in seats
    )
    missing = tuple(
        SeatStatus(seat=s.name, host=section.name, managed=True, state="missing", in_sync=False)
        for s in desired.seats_on(section.name)
        if section.reachable and not any(row.seat == s.name for row in section.seats)
    )
    gpus = tuple(
        GpuStatus(
            index=g.index,
            name=g.name,
            memory_total_mib=g.memory_total_mib,
            memory_used_mib=g.memory_used_mib,
            seats=g.seats,
        )
        for g in section.gpus
    )
    return HostStatus(
        name=section.name,
        reachable=section.reachable,
        error=section.error,
        gpus=gpus,
        seats=tuple(sorted(seats + missing, key=lambda s: s.seat)),
        applied_commit=observed.applied_commit,
        applied_at=observed.applied_at,
    )


def _seat(
    desired: DesiredFleet,
    host: str,
    row: SeatRow,
    changing: bool,
    loads: Mapping[str, EngineLoad],
    newest: Mapping[str, BenchResult],
    bench: BenchRecord,
) -> SeatStatus:
    spec = desired.seats.get(row.seat) if row.managed else None
    band = spec.band(desired.settings.concurrency_band) if spec else None
    load = loads.get(row.seat) if row.managed else None
    in_band = None
    if band is not None and row.concurrency is not None:
        in_band = band.min <= row.concurrency <= band.max
    result = newest.get(row.seat) if row.managed else None
    return SeatStatus(
        seat=row.seat,
        host=host,
        managed=row.managed,
        state=row.state,
        in_sync=row.managed and not changing and spec is not None,
        port=row.port,
        gpus=row.gpus,
        model=row.model,
        served_names=row.served_names,
        vram_mib=row.vram_mib,
        running=load.running if load else None,
        waiting=load.waiting if load else None,
        kv_usage=load.kv_usage if load else None,
        kv_cache_tokens=row.kv_cache_tokens,
        context=row.context,
        concurrency=row.concurrency,
        band=(band.min, band.max) if band else None,
        in_band=in_band,
        aliases=row.aliases,
        bench=_bench(result, bench) if result else None,
    )


def _stale(bench: BenchStatus, result: BenchResult, live_hash: str | None) -> BenchStatus:
    """Stale once the seat's spec hash moved since it was measured."""
    return bench.model_copy(update={"stale": bool(live_hash) and result.spec_hash != live_hash})


def _bench(result: BenchResult, record: BenchRecord) -> BenchStatus:
    """The result judged against its committed baseline (a loop's result already is)."""
    judged = result if result.baseline_ratio is not None else against_committed(result, record)
    baseline = baseline_of(record, result.seat, result.spec_hash)
    is_baseline = judged.baseline or baseline == result
    level = judged.regression or ("baseline" if is_baseline else "ok")
    return BenchStatus(
        date=result.date,
        via=result.via,
        decode_tok_s=judged.decode_tok_s.median if judged.decode_tok_s else None,
        baseline_tok_s=baseline.decode_tok_s.median if baseline and baseline.decode_tok_s else None,
        ratio=judged.baseline_ratio,
        level=level if judged.baseline_ratio is not None else "unjudged",
    )
