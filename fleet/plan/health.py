"""The health gate of a seat after apply started it: healthy, still starting, or failed.

Pure: `judge_seat` looks at one observation of the seat (container, argv, engine log, GPUs)
and what its HTTP endpoints answered, and says which. apply polls it until healthy,
failed or timed out. A seat is healthy when its container runs, its argv carries every
flag the spec implies, /health answers, /v1/models lists its served name, its log reports
KV tokens, KV tokens / context lies in its band, and nvidia-smi shows it on its GPUs.
"""

from __future__ import annotations

from enum import StrEnum

from fleet import engines
from fleet.base import CoreModel
from fleet.observed.models import ObservedSeat
from fleet.plan.diff import desired_shape, diff_seat, observed_shape
from fleet.runtimes import runtime_for
from fleet.spec.models import ConcurrencyBand, Host, Seat

SERVICE_KEYS = ("env ", "service ")  # definition keys, not argv: the gate checks the argv


class HealthState(StrEnum):
    """Where a starting seat stands."""

    HEALTHY = "healthy"
    STARTING = "starting"
    FAILED = "failed"


class Verdict(CoreModel):
    """The gate's answer and its reason."""

    state: HealthState
    reason: str


class Endpoints(CoreModel):
    """What the engine's HTTP endpoints answered (None: no answer yet)."""

    health_status: int | None = None
    served_models: tuple[str, ...] | None = None


def _starting(reason: str) -> Verdict:
    return Verdict(state=HealthState.STARTING, reason=reason)


def _failed(reason: str) -> Verdict:
    return Verdict(state=HealthState.FAILED, reason=reason)


def judge_seat(
    seat: Seat,
    host: Host,
    band: ConcurrencyBand,
    live: ObservedSeat | None,
    endpoints: Endpoints,
    gpu_facts: bool = True,
) -> Verdict:
    """One look at a starting seat."""
    if live is None:
        return _starting("container not created yet")
    container = live.instance
    errors = live.engine.errors if live.engine else ()
    if container.state in ("exited", "dead") or container.restart_count > 0:
        detail = errors[-1].message if errors else f"exit code {container.exit_code}"
        return _failed(f"engine {container.state} ({detail})")
    if container.state != "running":
        return _starting(f"container {container.state}")
    definition = runtime_for(host).DEFINITION
    missing = [
        c.field
        for c in diff_seat(desired_shape(seat, host), observed_shape(live))
        if c.field not in ("gpus", definition) and not c.field.startswith(SERVICE_KEYS)
    ]
    if missing:
        return _failed(
            f"running argv does not carry what the spec implies: "
            f"{', '.join(missing)} (would silently run without them)"
        )
    return _judge_running(seat, band, live, endpoints, gpu_facts)


def _judge_running(
    seat: Seat, band: ConcurrencyBand, live: ObservedSeat, endpoints: Endpoints, gpu_facts: bool
) -> Verdict:
    if endpoints.health_status != 200:
        return _starting(f"/health answers {endpoints.health_status or 'nothing yet'}")
    if endpoints.served_models is None or seat.served_name not in endpoints.served_models:
        return _starting(f"/v1/models does not list {seat.served_name} yet")
    tokens = live.engine.kv_cache_tokens if live.engine else None
    if not tokens:
        return _starting("startup log reports no KV-cache tokens yet")
    # the engine's own Maximum concurrency where it logs one (for sliding-window and hybrid
    # models KV tokens / context is not it), as plan and `fleet fit` predict it
    logged = live.engine.max_concurrency if live.engine else None
    concurrency = logged or engines.concurrency(tokens, seat.context) or 0.0
    if not band.min <= concurrency <= band.max:
        how = (
            f"{engines.engine_for(seat.engine).LABEL}'s Maximum concurrency at {seat.context:,}"
            if logged
            else f"{tokens:,} KV tokens / {seat.context:,}"
        )
        return _failed(
            f"concurrency {concurrency:.2f}x ({how}) is outside {band.min:g}x..{band.max:g}x"
        )
    if gpu_facts and tuple(sorted(live.gpus)) != tuple(sorted(seat.gpus)):
        return _starting(
            f"nvidia-smi shows the engine on GPUs {list(live.gpus)}, expected {list(seat.gpus)}"
        )
    return Verdict(
        state=HealthState.HEALTHY,
        reason=f"serves {seat.served_name}, {tokens:,} KV tokens = "
        f"{concurrency:.2f}x, "
        + (f"on GPU {', '.join(map(str, seat.gpus))}" if seat.gpus else "on the CPU"),
    )
