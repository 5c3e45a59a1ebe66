"""Draining a seat before removal (reconciler.workflows.drain), against a fake host's /metrics.

drain polls once a second, so the waiting cases cost about a second each.
"""

from __future__ import annotations

import pytest

from fleet.runtimes.compose import render_compose
from reconciler.workflows.drain import drain, running_requests
from tests.fakes.host import FakeHost, Reply
from tests.unit.render.test_compose import example

ADDRESS, PORT = "127.0.0.11", 8026  # flash on tower
COMPOSE = "/srv/fleet/compose.yaml"


def gauge(running: float) -> Reply:
    sample = f'vllm:num_requests_running{{model_name="flash"}} {running}'
    return Reply(200, f"# TYPE vllm:num_requests_running gauge\n{sample}\n")


class Waits:
    def __init__(self) -> None:
        self.reasons: list[str] = []

    def waiting(self, reason: str, seconds: float) -> None:
        self.reasons.append(reason)


CASES: list[tuple[str, list[Reply], bool, list[str]]] = [
    ("idle", [gauge(0.0)], True, []),
    ("no-gauge", [Reply(200, "# only other metrics\nprocess_cpu_seconds_total 3.0\n")], True, []),
    ("drains-after-a-wait", [gauge(2.0), gauge(0.0)], True, ["flash still runs 2 request(s)"]),
    ("stays-busy", [gauge(3.0)], False, ["flash still runs 3 request(s)"]),
    ("nothing-answers", [], True, []),
]


@pytest.mark.parametrize(
    ("replies", "drained", "waits"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_drain_waits_for_running_requests_within_its_bound(
    replies: list[Reply], drained: bool, waits: list[str]
) -> None:
    host = FakeHost("tower")
    if replies:
        host.serve(ADDRESS, PORT, "/metrics", *replies)
    waiter = Waits()
    assert drain(host, example().hosts["tower"], "flash", 0.2, waiter, port=PORT) is drained
    assert waiter.reasons == waits
    asked = [detail for kind, detail in host.journal if kind == "http"]
    assert asked == [f"GET {ADDRESS}:{PORT}/metrics"] * (len(waits) + bool(replies))


def test_drain_finds_the_port_from_docker_and_skips_a_seat_without_a_container() -> None:
    fleet = example()
    host = FakeHost("tower", files={COMPOSE: render_compose(fleet, "tower")})
    host.compose_up("fleet-tower", COMPOSE, "flash")
    assert drain(host, fleet.hosts["tower"], "flash", 0.2, Waits()) is True
    assert drain(host, fleet.hosts["tower"], "gone", 0.2, Waits()) is True
    assert [d for k, d in host.journal if k in ("exec", "http")] == [
        "docker ps --filter label=fleet.seat=flash --format '{{.Ports}}'",
        f"GET {ADDRESS}:{PORT}/metrics",  # the engine flash runs answers: nothing running
        "docker ps --filter label=fleet.seat=gone --format '{{.Ports}}'",
    ]


@pytest.mark.parametrize(
    ("metrics", "running"),
    [
        ('vllm:num_requests_running{model_name="a"} 1.0\nvllm:num_requests_running 2\n', 3.0),
        ("vllm:num_requests_waiting 4\n", None),
    ],
    ids=["summed-over-models", "absent"],
)
def test_running_requests_reads_the_gauge(metrics: str, running: float | None) -> None:
    assert running_requests(metrics) == running
