"""What each GPU holds once a plan ran, and where that is more than the GPU has.

desired/'s seats count as their KV budgets size them (`fleet.plan.predict`); beside them
stay the containers desired/ does not put there and processes in no container. Called by
`fleet.plan.fit` (a prediction's per-GPU memory, the room `fleet fit` sizes into) and
`fleet.plan.blockers` (`overcommitted`). Pure.
"""

from __future__ import annotations

from fleet.observed.models import Observation, ObservedHost
from fleet.plan import predict
from fleet.plan.predict import MIB, GpuMemory
from fleet.spec.models import DesiredFleet, Seat


def gpu_holders(
    desired: DesiredFleet,
    observation: Observation,
    host_name: str,
    gpu: int,
    processes: bool = True,
) -> list[tuple[str, int]]:
    """(who, MiB) of everything on one GPU once the plan ran: desired/'s seats as their
    budgets size them, and what stays beside them (other containers and, with `processes`,
    processes in no container, which the nvidia-smi ledger of `blockers` names already)."""
    holders: list[tuple[str, int]] = []
    for seat in desired.seats_on(host_name):
        if gpu in seat.gpus:
            mib = predict.footprint_mib(predict.basis(desired, observation, seat), seat)
            if mib is not None:
                holders.append((seat.name, mib))
    host = observation.hosts.get(host_name)
    return holders + (_staying(desired, host, gpu, processes) if host else [])


def gpu_memory(desired: DesiredFleet, observation: Observation, seat: Seat) -> dict[int, GpuMemory]:
    """Each of the seat's GPUs: the memory of every seat on it, against its total."""
    host = observation.hosts.get(seat.host)
    if host is None or not host.reachable:
        return {}
    found: dict[int, GpuMemory] = {}
    for gpu in seat.gpus:
        total = predict.gpu_total_mib(desired, host, gpu)
        if total is not None:
            used = sum(mib for _, mib in gpu_holders(desired, observation, seat.host, gpu))
            found[gpu] = GpuMemory(used_mib=used, total_mib=total)
    return found


def _staying(
    desired: DesiredFleet, host: ObservedHost, gpu: int, processes: bool
) -> list[tuple[str, int]]:
    """Containers desired/ does not put on this host (a hand-made one a seat adopts is that
    seat), and processes in no seat's container."""
    planned = {s.name for s in desired.seats_on(host.name)}
    adopted = {id(a) for name in planned if (a := host.adoptable(name)) is not None}
    stays = [
        (s.name if s.managed else f"container {s.name}", s.vram_mib // max(len(s.gpus), 1))
        for s in host.seats
        if gpu in s.gpus and not (s.managed and s.name in planned) and id(s) not in adopted
    ]
    seated = {s.instance.id for s in host.seats}
    stays += [
        (f"pid {p.pid}", p.used_mib)
        for p in host.processes
        if processes and p.gpu_index == gpu and (p.container_id or "") not in seated
    ]
    return stays


def overcommitted(desired: DesiredFleet, observation: Observation, seat: Seat) -> list[str]:
    """Per GPU of the seat where desired/'s budgets and what stays beside them need more than
    the GPU has: the numbers, who holds the rest, and the fix."""
    host = observation.hosts[seat.host]
    found = []
    for gpu in seat.gpus:
        total = predict.gpu_total_mib(desired, host, gpu)
        holders = gpu_holders(desired, observation, seat.host, gpu, processes=False)
        mine = sum(mib for who, mib in holders if who == seat.name)
        others = [(who, mib) for who, mib in holders if who != seat.name]
        left = (total or 0) - sum(mib for _, mib in others)
        if total is None or not mine or mine <= left:
            continue
        held = ", ".join(f"{who} {mib:,} MiB" for who, mib in others) or "nothing"
        where = f"{seat.host} GPU {gpu} ({total:,} MiB)"
        found.append(_overcommit(seat, where, mine, left, held))
    return found


def _overcommit(seat: Seat, where: str, mine: int, left: int, held: str) -> str:
    free = max(left, 0)
    fix = f"or run fleet fit {seat.name}"
    if seat.gpu_memory_utilization is not None:
        share = free / (mine / seat.gpu_memory_utilization)
        return (
            f"gpu_memory_utilization {seat.gpu_memory_utilization:g} asks {mine:,} MiB of "
            f"{where}, but the seats that stay beside it leave {free:,} MiB ({held}): set "
            f"gpu_memory_utilization to at most {share:.3f}, {fix}"
        )
    over = mine - free
    kv = (seat.kv_cache_bytes or 0) // MIB - over
    cut = f"set kv_cache_bytes to at most {kv:,}MiB, " if kv > 0 else "move a seat, "
    return (
        f"needs ~{mine:,} MiB of {where}, but the seats that stay beside it leave "
        f"{free:,} MiB ({held}); over by {over:,} MiB: {cut}{fix}"
    )
