"""Blockers: reasons a plan must not be applied, found before anything is touched.

Called by `fleet.plan` for the seats it would create or replace: the host must be
reachable, the model directory must exist there, the seat must fit in the GPUs' observed
free memory (weights from the seat's last logged figure, else the model's size on disk,
plus its KV budget and a fixed engine overhead), and the image's vLLM must know every flag
fleet renders (e.g. --kv-cache-memory-bytes came in vLLM 0.11).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from fleet.engines import engine_for
from fleet.observed.models import Observation, ObservedGpu, ObservedHost
from fleet.plan.actions import SEAT_CHANGES, Action, ActionKind, Blocker
from fleet.spec.images import parse_image
from fleet.spec.models import DesiredFleet, Seat

MIB = 1024**2
ENGINE_OVERHEAD_MIB = 1024  # CUDA context, activations and graphs beside weights and KV


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
    if seat.model.rstrip("/") in host.missing_paths:
        yield Blocker(
            target=seat.name, message=f"model directory {seat.model} does not exist on {seat.host}"
        )
    yield from _flag_blockers(seat)
    yield from _memory_blockers(desired, host, seat, ledgers)


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
    names = {s.container.id: s.name if s.managed else f"container {s.name}" for s in host.seats}
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
        and (current.tensor_parallel_size or 1) == len(seat.gpus)
    ):
        return int(current.engine.weights_gib * 1024)
    info = host.models.get(seat.model.rstrip("/"))
    if info is None or info.size_bytes is None:
        return None
    return info.size_bytes // len(seat.gpus) // MIB


def _gateway_blockers(observation: Observation) -> Iterator[Blocker]:
    gateway = observation.gateway
    if gateway is None:
        return
    if not gateway.reachable or gateway.config is None:
        yield Blocker(target="gateway", message=f"gateway config unavailable: {gateway.error}")
