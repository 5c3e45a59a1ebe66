"""The health gate's verdicts on one look at a starting seat."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fleet.engines.vllm.log import EngineError, EngineReport, ErrorKind
from fleet.observed.models import ObservedSeat
from fleet.plan.health import Endpoints, HealthState, judge_seat
from tests.unit.plan.fakes import live_seat
from tests.unit.render.test_compose import example

READY = Endpoints(health_status=200, served_models=("sec",))
Tweak = Callable[[ObservedSeat], ObservedSeat | None]


def container(**update: object) -> Tweak:
    return lambda s: s.model_copy(update={"instance": s.instance.model_copy(update=update)})


def without_flag(argv: tuple[str, ...], flag: str) -> tuple[str, ...]:
    """The argv a wrapper entrypoint runs when it drops one flag and its value."""
    at = argv.index(flag)
    return argv[:at] + argv[at + 2 :]


def engine(**update: object) -> Tweak:
    return lambda s: s.model_copy(
        update={"engine": (s.engine or EngineReport()).model_copy(update=update)}
    )


CASES: list[tuple[str, Tweak, Endpoints, HealthState, str]] = [
    ("healthy", lambda s: s, READY, HealthState.HEALTHY, "serves sec, 393,216 KV tokens"),
    ("not-created", lambda s: None, READY, HealthState.STARTING, "container not created"),
    (
        "exited",
        container(state="exited", exit_code=1),
        READY,
        HealthState.FAILED,
        "engine exited (exit code 1)",
    ),
    (
        "restarting-oom",
        lambda s: engine(
            errors=(EngineError(kind=ErrorKind.CUDA_OOM, message="CUDA out of memory"),)
        )(container(state="restarting", restart_count=2)(s)),
        READY,
        HealthState.FAILED,
        "CUDA out of memory",
    ),
    (
        "kv-flag-ignored",
        lambda s: container(argv=without_flag(s.instance.argv, "--kv-cache-memory-bytes"))(s),
        READY,
        HealthState.FAILED,
        "argv does not carry what the spec implies: kv_cache_bytes",
    ),
    ("no-health", lambda s: s, Endpoints(), HealthState.STARTING, "/health answers nothing"),
    (
        "name-not-served",
        lambda s: s,
        Endpoints(health_status=200, served_models=("x",)),
        HealthState.STARTING,
        "/v1/models does not list sec",
    ),
    ("no-kv-line", engine(kv_cache_tokens=None), READY, HealthState.STARTING, "no KV-cache tokens"),
    (
        "out-of-band",
        engine(kv_cache_tokens=262144),
        READY,
        HealthState.FAILED,
        "concurrency 1.00x (262,144 KV tokens / 262,144) is outside 1.2x..2.5x",
    ),
    (
        # a hybrid model: 84,800 tokens are 0.32 of the context, but vLLM's own figure,
        # what the band judges, is 1.25 requests
        "hybrid-in-band-by-max-concurrency",
        engine(kv_cache_tokens=84_800, max_concurrency=1.25),
        READY,
        HealthState.HEALTHY,
        "serves sec, 84,800 KV tokens = 1.25x",
    ),
    (
        "hybrid-out-of-band",
        engine(kv_cache_tokens=84_800, max_concurrency=1.1),
        READY,
        HealthState.FAILED,
        "concurrency 1.10x (vLLM's Maximum concurrency at 262,144) is outside 1.2x..2.5x",
    ),
    (
        "wrong-gpu",
        lambda s: s.model_copy(update={"gpus": (1,)}),
        READY,
        HealthState.STARTING,
        "nvidia-smi shows the engine on GPUs [1], expected [0]",
    ),
]


@pytest.mark.parametrize(
    ("tweak", "answers", "state", "reason"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_verdicts(tweak: Tweak, answers: Endpoints, state: HealthState, reason: str) -> None:
    fleet = example()
    seat = fleet.seats["sec"]
    live = tweak(live_seat(fleet, seat))
    verdict = judge_seat(seat, fleet.hosts["tower"], fleet.settings.concurrency_band, live, answers)
    assert verdict.state is state
    assert reason in verdict.reason


@pytest.mark.parametrize(
    ("gpus", "where"), [((0,), "on GPU 0"), ((), "on the CPU")], ids=["gpu", "cpu"]
)
def test_a_healthy_seat_says_where_it_runs(gpus: tuple[int, ...], where: str) -> None:
    fleet = example()
    seat = fleet.seats["coder"].model_copy(update={"gpus": gpus})
    live = live_seat(fleet, seat).model_copy(update={"gpus": gpus})
    answers = Endpoints(health_status=200, served_models=("coder",))
    band = fleet.settings.concurrency_band
    verdict = judge_seat(seat, fleet.hosts["tower"], band, live, answers)
    assert verdict.state is HealthState.HEALTHY and verdict.reason.endswith(where), verdict
