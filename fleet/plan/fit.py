"""The prediction every seat action carries, and the KV budgets that keep a seat inside
its concurrency band.

Called by `fleet.plan.plan` (`predict_seat`), `fleet.plan.blockers` (`band_budgets`) and
`fleet fit` (`fit_seat`, `set_kv_budget`). Pure; the per-seat figures come from
`fleet.plan.predict`, what each GPU holds from `fleet.plan.gpu_share`. `set_kv_budget`
edits a seat file as text: the one value changes and every other byte (comments, key
order, spacing, line ends) stays.
"""

from __future__ import annotations

import math
import re

from fleet.base import CoreModel
from fleet.engines import engine_for
from fleet.errors import PlanError
from fleet.facts.kv_estimate import GIB, KvLayout, uniform_layout
from fleet.observed.models import Observation
from fleet.plan import host_memory, predict
from fleet.plan.gpu_share import gpu_holders, gpu_memory
from fleet.plan.predict import MIB, Basis, Prediction, PredictionSource
from fleet.spec.models import ConcurrencyBand, DesiredFleet, Seat
from fleet.units import format_bytes

_BUDGET_LINE = re.compile(
    r"^(?P<key>kv_cache_bytes|gpu_memory_utilization)(?P<sep>[ \t]*:[ \t]*)"
    r"(?P<value>[^#\r\n]*?)(?P<tail>[ \t]*(?:#[^\r\n]*)?)(?=\r?\n|\Z)",
    re.MULTILINE,
)


def predict_seat(desired: DesiredFleet, observation: Observation, seat: Seat) -> Prediction:
    """The prediction plan shows beside the seat's action."""
    band = seat.band(desired.settings.concurrency_band)
    engine = engine_for(seat.engine)
    if not engine.ESTIMATES_KV:
        tokens = engine.fixed_kv_tokens(seat)
        base = predict.basis(desired, observation, seat)
        return Prediction(
            kv_tokens=tokens,
            concurrency=tokens / seat.context if tokens else None,
            max_concurrency=tokens / seat.context if tokens else None,
            context=seat.context,
            source=PredictionSource.ESTIMATE,
            band=band,
            gpu_memory=gpu_memory(desired, observation, seat) if base.memory else {},
            memory=base.memory,
            unknown=(engine.KV_SIZING, *base.unknown),
        )
    base = predict.basis(desired, observation, seat)
    tokens = predict.kv_tokens(base, seat)
    return Prediction(
        kv_cache_bytes=predict.kv_budget(base, seat),
        kv_tokens=tokens,
        concurrency=round(tokens / seat.context, 4) if tokens is not None else None,
        max_concurrency=predict.max_concurrency(base, seat),
        context=seat.context,
        source=base.source if tokens is not None else None,
        band=band,
        max_model_len=base.max_model_len,
        gpu_memory=gpu_memory(desired, observation, seat),
        ram=_ram(observation, seat),
        unknown=base.unknown,
        assumptions=base.layout.assumptions if base.layout and base.exact is None else (),
    )


def _ram(observation: Observation, seat: Seat) -> str | None:
    """A CPU seat's RAM line (`fleet.plan.host_memory.ram_line`)."""
    host = observation.hosts.get(seat.host)
    return host_memory.ram_line(host, seat) if host is not None and not seat.gpus else None


class Budgets(CoreModel):
    """Per-GPU KV budgets for a seat's context: the band's ends and a target inside it
    (`target_concurrency`, the engine's `Maximum concurrency` the target gives)."""

    low: int
    high: int
    target: int
    target_concurrency: float


def sizing_layout(basis: Basis) -> KvLayout | None:
    """The layout to size budgets with: config.json's, else one read off the exact log."""
    if basis.layout is not None:
        return basis.layout
    log = basis.exact
    if log is not None and log.kv_cache_tokens and log.kv_cache_gib:
        return uniform_layout(max(int(log.kv_cache_gib * GIB) // log.kv_cache_tokens, 1))
    return None


def band_budgets(
    basis: Basis, seat: Seat, band: ConcurrencyBand, concurrency: float | None = None
) -> Budgets | None:
    """The budgets inside the band (None: unknown layout, or no budget is); the target is
    the middle of the band unless `concurrency` says, rounded up to whole MiB. The band
    judges the engine's `Maximum concurrency` at the seat's context, as the health gate
    does (for sliding-window and hybrid models it is not KV tokens / context)."""
    layout = sizing_layout(basis)
    if layout is None:
        return None
    wanted = concurrency if concurrency is not None else (band.min + band.max) / 2
    context = seat.context
    floor = layout.request_bytes(context)  # below it vLLM refuses to start
    low = max(layout.budget_for_concurrency(band.min, context), floor)
    high = layout.largest_budget_for_concurrency(band.max, context)
    target = max(layout.budget_for_concurrency(wanted, context), floor)
    if low > high:
        return None
    target = -(-target // MIB) * MIB
    return Budgets(low=low, high=high, target=target, target_concurrency=wanted)


def utilization_for(basis: Basis, kv_bytes: int, up: bool = True) -> float | None:
    """The gpu_memory_utilization that leaves `kv_bytes` after weights and overhead, to
    three decimals (rounded up for a lower end, down for an upper one)."""
    if basis.total_mib is None or basis.weights_mib is None:
        return None
    need = basis.weights_mib + kv_bytes / MIB + predict.fraction_overhead_mib(basis)
    thousandths = need / basis.total_mib * 1000
    return (math.ceil(thousandths) if up else math.floor(thousandths)) / 1000


def largest_kv(basis: Basis, seat: Seat) -> int | None:
    """The most KV one of the seat's GPUs could give it beside its weights (all of it)."""
    if basis.total_mib is None or basis.weights_mib is None:
        return None
    overhead = (
        predict.fraction_overhead_mib(basis)
        if seat.gpu_memory_utilization is not None
        else predict.ENGINE_OVERHEAD_MIB
    )
    return max(basis.total_mib - basis.weights_mib - overhead, 0) * MIB


class GpuRoom(CoreModel):
    """One of the seat's GPUs at the fitted budget: who else holds it, what is left."""

    gpu: int
    total_mib: int
    others: tuple[tuple[str, int], ...]
    seat_mib: int | None

    @property
    def headroom_mib(self) -> int | None:
        """What the GPU has left with this seat at the fitted budget."""
        if self.seat_mib is None:
            return None
        return self.total_mib - sum(mib for _, mib in self.others) - self.seat_mib


class Fit(CoreModel):
    """`fleet fit`'s answer for one seat: the budget chosen (None: none fits, and why)."""

    seat: str
    host: str
    gpus: tuple[GpuRoom, ...]
    context: int
    band: ConcurrencyBand
    source: PredictionSource | None
    budgets: Budgets | None
    chosen: int | None
    kv_tokens: int | None
    max_concurrency: float | None = None
    utilization: float | None
    utilization_range: tuple[float | None, float | None]
    reason: str | None = None
    unknown: tuple[str, ...] = ()

    @property
    def value(self) -> str:
        """The kv_cache_bytes to write (whole MiB); PlanError when no budget fits."""
        if self.chosen is None:
            raise PlanError(f"no KV budget fits {self.seat}: {self.reason}")
        return format_bytes(self.chosen)


def fit_seat(
    desired: DesiredFleet, observation: Observation, name: str, concurrency: float | None = None
) -> Fit:
    """The budget that gives `concurrency` (default: the band's middle), or the largest in
    the band that fits beside the GPUs' other seats, and what each GPU has left."""
    seat = desired.seats[name]
    engine = engine_for(seat.engine)
    if not engine.ESTIMATES_KV:
        raise PlanError(f"{name} is a {engine.NAME} seat: {engine.KV_SIZING}")
    band = seat.band(desired.settings.concurrency_band)
    base = predict.basis(desired, observation, seat)
    budgets = band_budgets(base, seat, band, concurrency)
    rooms = _rooms(desired, observation, seat, base)
    chosen, reason = _choose(base, seat, budgets, rooms)
    layout = sizing_layout(base)
    with_seat = tuple(r.model_copy(update={"seat_mib": _footprint(base, chosen)}) for r in rooms)
    low, high = (budgets.low, budgets.high) if budgets else (None, None)
    return Fit(
        seat=name,
        host=seat.host,
        gpus=with_seat,
        context=seat.context,
        band=band,
        source=PredictionSource.ESTIMATE if base.layout else base.source,
        budgets=budgets,
        chosen=chosen,
        kv_tokens=layout.tokens(chosen, seat.context) if layout and chosen is not None else None,
        max_concurrency=(
            round(layout.max_concurrency(chosen, seat.context), 4)
            if layout and chosen is not None
            else None
        ),
        utilization=utilization_for(base, chosen) if chosen is not None else None,
        utilization_range=(
            utilization_for(base, low) if low is not None else None,
            utilization_for(base, high, up=False) if high is not None else None,
        ),
        reason=reason,
        unknown=base.unknown,
    )


def _footprint(base: Basis, kv_bytes: int | None) -> int | None:
    if kv_bytes is None or base.weights_mib is None:
        return None
    return base.weights_mib + -(-kv_bytes // MIB) + predict.ENGINE_OVERHEAD_MIB


def _choose(
    base: Basis, seat: Seat, budgets: Budgets | None, rooms: tuple[GpuRoom, ...]
) -> tuple[int | None, str | None]:
    """The target if it fits, else the largest budget in the band that does."""
    if budgets is None:
        if sizing_layout(base) is None:
            return None, "its KV layout is not known (" + "; ".join(base.unknown) + ")"
        return None, f"no KV budget keeps a {seat.context:,} context inside its band"
    if base.weights_mib is None or not rooms:
        return budgets.target, None  # cannot tell what fits; said in `unknown`
    free = min(r.total_mib - sum(m for _, m in r.others) for r in rooms)
    most = (free - base.weights_mib - predict.ENGINE_OVERHEAD_MIB) * MIB
    if budgets.target <= most:
        return budgets.target, None
    if budgets.low <= most:
        return min(most, budgets.high) // MIB * MIB, None
    return None, (
        f"the band needs at least {predict.size_text(budgets.low)} of KV but the seats beside "
        f"it leave {predict.size_text(max(most, 0))} on {seat.host} GPU "
        f"{', '.join(map(str, seat.gpus))} beside its weights"
    )


def _rooms(
    desired: DesiredFleet, observation: Observation, seat: Seat, base: Basis
) -> tuple[GpuRoom, ...]:
    host = observation.hosts.get(seat.host)
    if host is None or not host.reachable:
        return ()
    rooms = []
    for gpu in seat.gpus:
        total = predict.gpu_total_mib(desired, host, gpu)
        if total is None:
            continue
        holders = gpu_holders(desired, observation, seat.host, gpu)
        others = tuple(h for h in holders if h[0] != seat.name)
        rooms.append(GpuRoom(gpu=gpu, total_mib=total, others=others, seat_mib=None))
    return tuple(rooms)


def set_kv_budget(text: str, value: str) -> str:
    """The seat file with its KV budget set to `value`: a `kv_cache_bytes` line gets the new
    value; a `gpu_memory_utilization` line becomes `kv_cache_bytes: value`. Nothing else in
    the text changes. PlanError when the file has no such top-level line (or two)."""
    found = list(_BUDGET_LINE.finditer(text))
    if len(found) != 1:
        raise PlanError(
            "the seat file needs exactly one top-level kv_cache_bytes or "
            "gpu_memory_utilization line to edit"
        )
    match = found[0]
    line = f"kv_cache_bytes{match['sep']}{value}{match['tail']}"
    return text[: match.start()] + line + text[match.end() :]
