"""The host seam itself: what the fake host answers, and observe reading it like a real host."""

from __future__ import annotations

import pytest

from fleet.errors import HostError, HostUnreachable
from fleet.runtimes.compose import render_compose
from reconciler.adapters.http import request_via
from reconciler.workflows.observe import observe_host
from tests.fakes.host import FakeHost, Reply
from tests.unit.render.test_compose import example

COMPOSE = "/srv/fleet/compose.yaml"


def test_an_unknown_command_fails_the_test_naming_it() -> None:
    with pytest.raises(AssertionError, match="no handler for command: service vllm restart"):
        FakeHost("tower").run("service vllm restart")


@pytest.mark.parametrize(
    ("failure", "message"),
    [
        ("exit 2: permission denied", "tower: `rm` exited 2: permission denied"),
        ("disk full", "tower: `rm` exited 1: disk full"),
    ],
    ids=["with-status", "stderr-only"],
)
def test_fail_on_fails_a_command_as_a_host_would(failure: str, message: str) -> None:
    host = FakeHost("tower", files={"/tmp/x": "x"}, fail_on={"rm -f": failure})
    with pytest.raises(HostError) as caught:
        host.check("rm -f /tmp/x")
    assert str(caught.value) == message
    assert host.files == {"/tmp/x": "x"}


def test_http_answers_what_the_test_registered_else_refuses() -> None:
    host = FakeHost("tower")
    host.serve("127.0.0.11", 8026, "/health", Reply(503, "loading"), Reply(200))
    answers = [request_via(host, "127.0.0.11", 8026, "GET", "/health") for _ in range(3)]
    assert [(a.status, a.body) for a in answers] == [(503, "loading"), (200, ""), (200, "")]
    assert request_via(host, "127.0.0.11", 8026, "GET", "/nope").status == 404
    with pytest.raises(HostUnreachable, match=r"connection to 127\.0\.0\.11:9 refused"):
        request_via(host, "127.0.0.11", 9, "GET", "/health")
    assert host.journal[:2] == [("tcp", "127.0.0.11:8026"), ("http", "GET 127.0.0.11:8026/health")]


def test_observe_reads_the_fake_like_a_host() -> None:
    fleet = example()
    host = FakeHost("tower", files={COMPOSE: render_compose(fleet, "tower")})
    for seat in ("flash", "reason"):
        host.compose_up("fleet-tower", COMPOSE, seat)
    host.files["/srv/fleet/.fleet.lock"] = "ops@laptop pid 7\n"
    host.files["/srv/fleet/.fleet-journal.jsonl"] = (
        '{"at": "2026-12-01T10:00:00Z", "step": "begin"}\n'
        '{"at": "2026-12-01T10:01:00Z", "step": "create-seat", "target": "flash"}\n'
    )
    observed = observe_host(fleet, host, "tower")
    assert [(s.name, s.gpus, s.instance.state) for s in observed.seats] == [
        ("flash", (2,), "running"),
        ("reason", (2, 3), "running"),
    ]
    assert [g.memory_used_mib for g in observed.gpus] == [0, 0, 40960, 20480]
    assert observed.lock == "ops@laptop pid 7"
    assert observed.interrupted == (  # begun, never finished nor rolled back
        "2026-12-01T10:00:00Z begin",
        "2026-12-01T10:01:00Z create-seat flash",
    )
    flash = observed.seat("flash")
    assert flash is not None and flash.engine is not None
    assert flash.engine.kv_cache_tokens == 98304
    assert [kind for kind, _ in host.journal] == ["exec"]
