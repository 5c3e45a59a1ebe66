"""How a replaced seat is replaced: surge (a second copy beside the old) or recreate.

Called by `fleet.plan.plan` for every replace-seat action. `auto` (the default) surges
when plan's own prediction says both copies fit on every GPU of the seat: the new copy's
footprint (weights, KV budget and overhead; a `gpu_memory_utilization` seat its fraction
of the GPU; a llama.cpp seat its buffers from its GGUF header and a CUDA context,
`fleet.plan.predict.footprint_mib`) beside everything the GPU holds once the
plan ran (`fleet.plan.gpu_share.gpu_holders`) and beside the old copy (what nvidia-smi
says it holds, else the new copy's footprint). A CPU seat recreates under `auto`: its
host's RAM is shared with every process there and nothing bounds what a second llama.cpp
process would take, so plan does not promise it fits. A recreate says which aliases are
down while the seat loads, and how long its last start took (the host's apply journal);
an alias with a healthy fallback is served by it meanwhile (`fleet.plan.handoff`).
The second copy is what the host's runtime runs where it `SURGES` (compose a
second service `<seat>-b`, systemd a second unit `fleet-<seat>-b.service`); on a runtime
that runs one copy only, seats recreate and `strategy: surge` is a blocker. Pure.
"""

from __future__ import annotations

from typing import Literal

from fleet.base import CoreModel
from fleet.observed.models import Observation
from fleet.plan import handoff, predict
from fleet.plan.gpu_share import gpu_holders
from fleet.plan.handoff import Handoff, Untouchable
from fleet.runtimes import runtime_for
from fleet.spec.models import DesiredFleet, Seat

Strategy = Literal["surge", "recreate"]
ONE_COPY = "its host's runtime runs one copy of a seat, so its seats recreate"


class Downtime(CoreModel):
    """What a recreate takes away while the new copy loads: the aliases unavailable (those
    its handoffs do not cover)."""

    aliases: tuple[str, ...] = ()
    last_start_seconds: float | None = None

    def describe(self, seat: str, handoffs: tuple[Handoff, ...] = ()) -> str:
        """`char-rp, roleplay unavailable while it loads (last start took 74 s)`, or with
        handoffs `coder served by mid while it loads (...); autocomplete unavailable`."""
        last = self.last_start_seconds
        took = f" (last start took {max(round(last), 1)} s)" if last is not None else ""
        if handoffs:
            down = f"; {', '.join(self.aliases)} unavailable" if self.aliases else ""
            return f"{handoff.describe(handoffs)} while it loads{took}{down}"
        who = ", ".join(self.aliases) if self.aliases else f"seat {seat} (no alias)"
        return f"{who} unavailable while it loads{took}"


class Choice(CoreModel):
    """The strategy of one replace, why, and (recreate) what is down meanwhile, which
    aliases its fallbacks serve meanwhile, and why none does where one could (`note`)."""

    strategy: Strategy
    why: str
    downtime: Downtime | None = None
    handoffs: tuple[Handoff, ...] = ()
    note: str | None = None

    def line(self, seat: str) -> str:
        """`seat char-rp: recreate (GPU 1 has ...); char-rp, roleplay unavailable ...`."""
        tail = f"; {self.downtime.describe(seat, self.handoffs)}" if self.downtime else ""
        note = f" ({self.note})" if self.note else ""
        return f"seat {seat}: {self.strategy} ({self.why}){tail}{note}"

    def handing_off(
        self, desired: DesiredFleet, observation: Observation, seat: Seat, busy: Untouchable
    ) -> Choice:
        """This recreate with the aliases healthy fallbacks serve while it loads."""
        if self.downtime is None:
            return self
        found, note = handoff.find_handoffs(desired, observation, seat, self.downtime.aliases, busy)
        handed = {h.alias for h in found}
        left = tuple(a for a in self.downtime.aliases if a not in handed)
        return self.model_copy(
            update={
                "handoffs": found,
                "note": note,
                "downtime": self.downtime.model_copy(update={"aliases": left}),
            }
        )


class GpuRoom(CoreModel):
    """One GPU during a surge: what is free beside the old copy, what the new one needs."""

    gpu: int
    free_mib: int
    need_mib: int


def choose(desired: DesiredFleet, observation: Observation, seat: Seat) -> Choice:
    """Surge or recreate the running seat, by its `strategy`, its runtime and the GPUs' room."""
    if seat.strategy == "recreate":
        return _recreate(observation, seat, "strategy: recreate in desired/")
    if seat.strategy == "surge":
        return Choice(strategy="surge", why="strategy: surge in desired/")
    if not can_surge(desired, seat):
        return _recreate(observation, seat, ONE_COPY)
    return _auto(desired, observation, seat)


def can_surge(desired: DesiredFleet, seat: Seat) -> bool:
    """Whether the seat's runtime can run a second copy of it (`Runtime.SURGES`)."""
    return runtime_for(desired.hosts[seat.host]).SURGES


def _auto(desired: DesiredFleet, observation: Observation, seat: Seat) -> Choice:
    if not seat.gpus:
        return _recreate(observation, seat, "a CPU seat: auto surges only on GPUs")
    rooms = surge_rooms(desired, observation, seat)
    if rooms is None:
        return _recreate(observation, seat, "the memory a second copy needs is not known")
    tight = min(rooms, key=lambda r: r.free_mib - r.need_mib)
    said = f"GPU {tight.gpu} has {_gib(tight.free_mib)} free"
    if tight.free_mib >= tight.need_mib:
        return Choice(
            strategy="surge",
            why=f"{said} beside the running copy; the new one needs {_gib(tight.need_mib)}",
        )
    return _recreate(observation, seat, f"{said}; a second copy needs {_gib(tight.need_mib)}")


def surge_rooms(
    desired: DesiredFleet, observation: Observation, seat: Seat
) -> list[GpuRoom] | None:
    """Each GPU of the seat with both copies on it; None when a figure is not known."""
    host = observation.hosts.get(seat.host)
    found = host.seat(seat.name) if host is not None else None
    if host is None or not host.reachable or not seat.gpus:
        return None
    new = predict.footprint_mib(predict.basis(desired, observation, seat), seat)
    if new is None:
        return None
    old = found.vram_mib // len(seat.gpus) if found is not None and found.vram_mib else new
    rooms = []
    for gpu in seat.gpus:
        total = predict.gpu_total_mib(desired, host, gpu)
        if total is None:
            return None
        others = sum(
            m for who, m in gpu_holders(desired, observation, seat.host, gpu) if who != seat.name
        )
        rooms.append(GpuRoom(gpu=gpu, free_mib=total - others - old, need_mib=new))
    return rooms


def _recreate(observation: Observation, seat: Seat, why: str) -> Choice:
    host = observation.hosts.get(seat.host)
    return Choice(
        strategy="recreate",
        why=why,
        downtime=Downtime(
            aliases=_live_aliases(observation, seat),
            last_start_seconds=host.seat_start_seconds.get(seat.name) if host else None,
        ),
    )


def _live_aliases(observation: Observation, seat: Seat) -> tuple[str, ...]:
    """The aliases the gateway routes to the seat now (desired/'s when it is not read)."""
    gateway = observation.gateway
    if gateway is None or gateway.config is None:
        return seat.aliases
    return tuple(e.alias for e in gateway.config.entries if e.seat == seat.name)


def _gib(mib: int) -> str:
    return f"{max(mib, 0) / 1024:.1f} GiB"
