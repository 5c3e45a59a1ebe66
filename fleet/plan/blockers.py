"""Blockers: reasons a plan must not be applied, found before anything is touched.

Called by `fleet.plan` for the seats it would create or replace: the host must be
reachable, the model directory must exist there, the seat must fit in the GPUs' observed
free memory (weights from the seat's last logged figure, else the model's size on disk,
plus its KV budget and a fixed engine overhead), and the image's engine release must know
every flag fleet renders (`Engine.unsupported_flags`: each engine's flags and releases).

From the predictions (`fleet.plan.predict`, `fleet.plan.fit`), what the engine or the
health gate would refuse: a context above what config.json allows (unless the seat's env
sets the engine's LONG_CONTEXT_ENV to 1), a KV budget that holds less than one request of
the context, a concurrency outside the seat's band, the seats desired/ puts on a GPU
needing more than it has (with those that stay), an MTP method on a model without MTP
layers and a drafter that is not on the host (`fleet.plan.speculative_check`). Each
names the numbers and the fix.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from fleet.engines import engine_for
from fleet.facts.kv_estimate import GIB
from fleet.observed.models import Observation, ObservedGpu, ObservedHost
from fleet.plan import fit, gpu_share, predict
from fleet.plan.actions import SEAT_CHANGES, Action, ActionKind, Blocker
from fleet.plan.fetch import fetch_blockers
from fleet.plan.host_memory import ram_blockers
from fleet.plan.predict import ENGINE_OVERHEAD_MIB, MIB, Basis, PredictionSource
from fleet.plan.speculative_check import speculative_blockers
from fleet.spec.images import parse_image
from fleet.spec.models import ConcurrencyBand, DesiredFleet, Seat


def find_blockers(
    desired: DesiredFleet, observation: Observation, actions: list[Action]
) -> list[Blocker]:
    """Every blocker of the seat and gateway actions."""
    found: list[Blocker] = []
    ledgers: Ledgers = {}
    for action in actions:
        if action.kind in SEAT_CHANGES:
            found += _seat_blockers(desired, observation, desired.seats[action.target], ledgers)
        elif action.kind is ActionKind.RESTART_GATEWAY:
            found += _gateway_blockers(observation)
    found += fetch_blockers(desired, observation, actions)
    return sorted(set(found), key=lambda b: (b.target, b.message))


def _seat_blockers(
    desired: DesiredFleet, observation: Observation, seat: Seat, ledgers: Ledgers
) -> Iterator[Blocker]:
    host = observation.hosts.get(seat.host)
    if host is None or not host.reachable:
        yield Blocker(
            target=seat.name,
            message=f"host {seat.host} is unreachable: {host.error if host else 'not observed'}",
        )
        return
    if seat.model.rstrip("/") in host.missing_paths and seat.model_origin is None:
        yield Blocker(
            target=seat.name, message=f"model directory {seat.model} does not exist on {seat.host}"
        )
    yield from _flag_blockers(seat)
    yield from _memory_blockers(desired, host, seat, ledgers)
    if engine_for(seat.engine).ESTIMATES_KV:
        yield from _prediction_blockers(desired, observation, host, seat)


def _flag_blockers(seat: Seat) -> Iterator[Blocker]:
    version = parse_image(seat.image).version
    if version is None:
        return
    for reason in engine_for(seat.engine).unsupported_flags(seat, version):
        yield Blocker(target=seat.name, message=f"{reason}; image {seat.image} is older")


@dataclass
class GpuLedger:
    """One GPU's memory as the plan claims it: what is free and who holds the rest."""

    total_mib: int
    free_mib: int
    holders: dict[str, int] = field(default_factory=dict)

    def describe(self) -> str:
        """`24,576 MiB, in use: llama8b 20,480 MiB, pid 77 (no container) 2,000 MiB`."""
        held = ", ".join(f"{who} {mib:,} MiB" for who, mib in self.holders.items())
        in_use = self.total_mib - self.free_mib - sum(self.holders.values())
        if in_use > 0:
            held += f"{', ' if held else ''}{in_use:,} MiB by no process nvidia-smi lists"
        return f"{self.total_mib:,} MiB; in use: {held or 'nothing'}"


Ledgers = dict[tuple[str, int], GpuLedger]


def _ledger(host: ObservedHost, gpu: ObservedGpu) -> GpuLedger:
    names = {s.instance.id: s.name if s.managed else f"container {s.name}" for s in host.seats}
    holders: dict[str, int] = {}
    for proc in host.processes:
        if proc.gpu_index != gpu.index:
            continue
        who = names.get(proc.container_id or "") or f"pid {proc.pid} (no container)"
        holders[who] = holders.get(who, 0) + proc.used_mib
    return GpuLedger(gpu.memory_total_mib, gpu.memory_free_mib, holders)


def _memory_blockers(
    desired: DesiredFleet, host: ObservedHost, seat: Seat, ledgers: Ledgers
) -> Iterator[Blocker]:
    if not seat.gpus:  # a llama.cpp seat on the CPU: the host's RAM, not a GPU's memory
        yield from ram_blockers(host, seat)
        return
    if host.gpu_error or not host.gpus:
        yield Blocker(
            target=seat.name,
            message=f"cannot check GPU memory on {host.name}: "
            f"{host.gpu_error or 'no GPUs reported'}",
        )
        return
    current = host.seat(seat.name)
    for gpu in (g for g in host.gpus if g.index in seat.gpus):
        ledger = ledgers.setdefault((host.name, gpu.index), _ledger(host, gpu))
        if current is not None and gpu.index in current.gpus:
            ledger.free_mib += current.vram_mib // max(len(current.gpus), 1)
            ledger.holders.pop(seat.name, None)
        need = _need_mib(host, seat, gpu.memory_total_mib)
        if need is None:
            continue
        if need > ledger.free_mib:
            free = max(ledger.free_mib, 0)
            yield Blocker(
                target=seat.name,
                message=f"needs ~{need:,} MiB on {host.name} GPU {gpu.index}, which has "
                f"{free:,} MiB free of {ledger.describe()}; over-committed by "
                f"{need - free:,} MiB",
            )
        ledger.free_mib -= need
        ledger.holders[f"{seat.name} (planned)"] = need


def _need_mib(host: ObservedHost, seat: Seat, total_mib: int) -> int | None:
    """Memory the seat's engine will take on each of its GPUs."""
    if seat.gpu_memory_utilization is not None:
        return int(seat.gpu_memory_utilization * total_mib)
    weights = _weights_mib(host, seat)
    if weights is None or seat.kv_cache_bytes is None:
        return None
    return weights + seat.kv_cache_bytes // MIB + ENGINE_OVERHEAD_MIB


def _weights_mib(host: ObservedHost, seat: Seat) -> int | None:
    current = host.seat(seat.name)
    if (
        current is not None
        and current.model == seat.model
        and current.engine
        and current.engine.weights_gib
        and (current.tensor_parallel_size or 1) == seat.tp_size
    ):
        return int(current.engine.weights_gib * 1024)
    info = host.models.get(seat.model.rstrip("/"))
    if info is None or info.size_bytes is None:
        return None
    return info.size_bytes // seat.tp_size // MIB


def _prediction_blockers(
    desired: DesiredFleet, observation: Observation, host: ObservedHost, seat: Seat
) -> Iterator[Blocker]:
    base = predict.basis(desired, observation, seat)
    yield from _context_blockers(seat, base)
    yield from _kv_blockers(desired, seat, base)
    yield from speculative_blockers(host, seat)
    yield from _gpu_blockers(desired, observation, seat)


def _context_blockers(seat: Seat, base: Basis) -> Iterator[Blocker]:
    limit, engine = base.max_model_len, engine_for(seat.engine)
    env = engine.LONG_CONTEXT_ENV
    allowed = env is not None and seat.env.get(env, "").strip().lower() in ("1", "true")
    if limit is None or seat.context <= limit or allowed:
        return
    override = f", or env {env}: '1' (positions past it break the model)" if env else ""
    yield Blocker(
        target=seat.name,
        message=f"context {seat.context:,} is above the {limit:,} tokens {seat.model} allows "
        f"({base.max_model_len_source} in config.json), which {engine.LABEL} refuses: set "
        f"context to at most {limit:,}{override}",
    )


def _kv_blockers(desired: DesiredFleet, seat: Seat, base: Basis) -> Iterator[Blocker]:
    tokens, budget = predict.kv_tokens(base, seat), predict.kv_budget(base, seat)
    if tokens is None or budget is None:
        return
    band = seat.band(desired.settings.concurrency_band)
    figures = f"{_budget_text(seat, budget)} -> {tokens:,} KV tokens ({base.source})"
    # the engine's own maximum concurrency where it predicts one (for hybrid models, KV tokens /
    # context undercounts: the tokens are per KV cache group), as the health gate judges
    concurrency = predict.max_concurrency(base, seat) or tokens / seat.context
    if _refuses(base, seat, budget, tokens):
        yield Blocker(
            target=seat.name,
            message=f"{figures}, less than one {seat.context:,}-token request needs, so "
            f"{engine_for(seat.engine).LABEL} refuses to start: {_fix(seat, base, band)}",
        )
    elif not band.min <= concurrency <= band.max:
        yield Blocker(
            target=seat.name,
            message=f"{figures}, max concurrency {concurrency:.2f}x at {seat.context:,}, "
            f"outside its band {band.min:g}x.."
            f"{band.max:g}x, so the health gate would roll it back: {_fix(seat, base, band)}",
        )


def _budget_text(seat: Seat, budget: int) -> str:
    kv = f"KV {predict.size_text(budget)}"
    fraction = seat.gpu_memory_utilization
    return kv if fraction is None else f"gpu_memory_utilization {fraction:g} leaves {kv}"


def _refuses(base: Basis, seat: Seat, budget: int, tokens: int) -> bool:
    """The engine's start check: the budget must hold one request of the whole context."""
    if base.source is PredictionSource.EXACT or base.layout is None:
        return tokens < seat.context
    return base.layout.request_bytes(seat.context) > budget


def _fix(seat: Seat, base: Basis, band: ConcurrencyBand) -> str:
    budgets = fit.band_budgets(base, seat, band)
    if budgets is None:
        return f"no KV budget keeps a {seat.context:,} context in the band; change the context"
    most = fit.largest_kv(base, seat)
    layout = fit.sizing_layout(base)
    if most is not None and layout is not None and budgets.low > most:
        context = int(layout.tokens(most) / band.min) // 1024 * 1024
        return (
            f"the band needs at least {_gib(budgets.low, True)} of KV but GPU "
            f"{', '.join(map(str, seat.gpus))} leaves at most {_gib(most, False)} beside the "
            f"weights: lower the context to {context:,} or less, or spread the seat over more "
            "GPUs"
        )
    fix = f"kv_cache_bytes between {_gib(budgets.low, True)} and {_gib(budgets.high, False)}"
    low = fit.utilization_for(base, budgets.low)
    high = fit.utilization_for(base, budgets.high, up=False)
    if seat.gpu_memory_utilization is not None and low is not None and high is not None:
        fix = f"gpu_memory_utilization between {low:.3f} and {min(high, 1.0):.3f} (or {fix})"
    return f"set {fix}, or run fleet fit {seat.name}"


def _gib(size: int, up: bool) -> str:
    """A budget in GiB to one decimal, rounded into the range it bounds."""
    tenths = size / GIB * 10
    value = (-(-tenths // 1) if up else tenths // 1) / 10
    return f"{value:.1f}GiB" if value >= 1 else f"{(size // MIB) + (1 if up else 0):,}MiB"


def _gpu_blockers(desired: DesiredFleet, observation: Observation, seat: Seat) -> Iterator[Blocker]:
    for message in gpu_share.overcommitted(desired, observation, seat):
        yield Blocker(target=seat.name, message=message)


def _gateway_blockers(observation: Observation) -> Iterator[Blocker]:
    gateway = observation.gateway
    if gateway is None:
        return
    if not gateway.reachable or gateway.config is None:
        yield Blocker(target="gateway", message=f"gateway config unavailable: {gateway.error}")
