"""Draining a seat before removal (reconciler.workflows.drain), against a fake host's /metrics.

Each engine's own running-requests gauge is read; a seat whose gauge cannot be read is not
drained at once but waited on for the whole bound. Waits run on a FakeClock.
"""

from __future__ import annotations

import pytest

from fleet.runtimes.compose import render_compose
from reconciler.workflows.drain import drain, running_requests
from tests.fakes.clock import FakeClock
from tests.fakes.host import FakeHost, Reply
from tests.unit.render.test_compose import example

ADDRESS, PORT = "127.0.0.11", 8026  # flash on tower
COMPOSE = "/srv/fleet/compose.yaml"
BOUND = 120.0


def gauge(running: float, name: str = "vllm:num_requests_running") -> Reply:
    sample = f'{name}{{model_name="flash"}} {running}'
    return Reply(200, f"# TYPE {name} gauge\n{sample}\n")


def llama(running: float) -> Reply:
    return gauge(running, "llamacpp:requests_processing")


class Waits:
    def __init__(self) -> None:
        self.reasons: list[str] = []

    def waiting(self, reason: str, seconds: float) -> None:
        self.reasons.append(reason)


NO_GAUGE = "flash: /metrics answers no running-requests gauge, so drain waits out its bound (120 s)"
CASES: list[tuple[str, list[Reply], bool, list[str], float]] = [
    ("idle", [gauge(0.0)], True, [], 0.0),
    ("drains-after-a-wait", [gauge(2.0), gauge(0.0)], True, ["flash still runs 2 request(s)"], 1.0),
    (
        "llama-server-busy-then-idle",
        [llama(1.0), llama(0.0)],
        True,
        ["flash still runs 1 request(s)"],
        1.0,
    ),
    ("llama-server-idle", [llama(0.0)], True, [], 0.0),
    (
        "sglang-busy-then-idle",
        [gauge(1.0, "sglang:num_running_reqs"), gauge(0.0, "sglang:num_running_reqs")],
        True,
        ["flash still runs 1 request(s)"],
        1.0,
    ),
    ("stays-busy", [gauge(3.0)], False, ["flash still runs 3 request(s)"] * 121, 121.0),
    (
        "no-gauge-waits-the-bound",
        [Reply(200, "process_cpu_seconds_total 3.0\n")],
        False,
        [NO_GAUGE] * 121,
        121.0,
    ),
    (
        "metrics-not-served",
        [Reply(404, "not found")],
        False,
        [NO_GAUGE.replace("no running-requests gauge", "HTTP 404")] * 121,
        121.0,
    ),
    ("nothing-answers", [], True, [], 0.0),
]


@pytest.mark.parametrize(
    ("replies", "drained", "waits", "slept"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_drain_waits_for_running_requests_within_its_bound(
    replies: list[Reply], drained: bool, waits: list[str], slept: float
) -> None:
    host = FakeHost("tower")
    if replies:
        host.serve(ADDRESS, PORT, "/metrics", *replies)
    waiter, clock = Waits(), FakeClock()
    assert drain(host, example().hosts["tower"], "flash", BOUND, waiter, PORT, clock) is drained
    assert waiter.reasons == waits
    assert clock.waited == slept
    asked = [detail for kind, detail in host.journal if kind == "http"]
    assert asked == [f"GET {ADDRESS}:{PORT}/metrics"] * (len(waits) + bool(replies))


def test_drain_finds_the_port_from_docker_and_skips_a_seat_without_a_container() -> None:
    fleet = example()
    host = FakeHost("tower", files={COMPOSE: render_compose(fleet, "tower")})
    host.compose_up("fleet-tower", COMPOSE, "flash")
    clock = FakeClock()
    assert drain(host, fleet.hosts["tower"], "flash", 0.2, Waits(), clock=clock) is True
    assert drain(host, fleet.hosts["tower"], "gone", 0.2, Waits(), clock=clock) is True
    assert [d for k, d in host.journal if k in ("exec", "http")] == [
        "docker ps --filter label=fleet.seat=flash --format '{{.Ports}}'",
        f"GET {ADDRESS}:{PORT}/metrics",  # the engine flash runs answers: nothing running
        "docker ps --filter label=fleet.seat=gone --format '{{.Ports}}'",
    ]
    assert clock.waited == 0.0


@pytest.mark.parametrize(
    ("metrics", "running"),
    [
        ('vllm:num_requests_running{model_name="a"} 1.0\nvllm:num_requests_running 2\n', 3.0),
        ("llamacpp:requests_processing 2\nllamacpp:requests_deferred 1\n", 2.0),
        ("vllm:num_requests_waiting 4\n", None),
    ],
    ids=["summed-over-models", "llama-server", "absent"],
)
def test_running_requests_reads_the_engines_gauge(metrics: str, running: float | None) -> None:
    assert running_requests(metrics) == running
