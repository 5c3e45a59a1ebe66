"""Taking a hand-made container over: stopped, the seat started under fleet's project,
removed only once the seat is healthy; started again if the seat fails. On a fake host."""

from __future__ import annotations

import pytest

from fleet.errors import ApplyError
from fleet.plan.actions import Action, ActionKind
from fleet.plan.plan import Plan
from fleet.runtimes.compose import render_compose, render_service
from reconciler.workflows.apply import ApplyOptions, apply_plan
from tests.fakes.clock import FakeClock
from tests.fakes.containers import FakeContainer
from tests.fakes.engines import engine_log
from tests.fakes.host import FakeHost, FakeSessions
from tests.unit.render.test_compose import example
from tests.unit.workflows.test_apply import COMPOSE, OOM, Steps

DESIRED = example()
FAST = ApplyOptions(seat_timeout=5.0, gateway_timeout=1.0, drain_timeout=1.0, clock=FakeClock())
PLAN = Plan(
    created_at="T",
    actions=(
        Action(
            kind=ActionKind.REPLACE_SEAT,
            target="coder",
            host="tower",
            reasons=("takes over hand-made container coder-by-hand",),
            adopts="coder-by-hand",
        ),
    ),
)


def tower_with_a_hand_made_coder() -> FakeHost:
    compose = render_compose(DESIRED.model_copy(update={"seats": {}}), "tower")
    host = FakeHost("tower", files={COMPOSE: compose})
    definition = render_service(DESIRED.seats["coder"], DESIRED.hosts["tower"])
    definition["labels"] = {"com.docker.compose.service": "coder"}  # made by hand, not by fleet
    by_hand = FakeContainer("e" * 64, "coder-by-hand", "by-hand", definition, pid=3000)
    by_hand.log = engine_log(by_hand.argv)
    host.containers["by-hand"] = by_hand
    return host


def test_the_hand_made_container_goes_only_after_the_seat_is_healthy() -> None:
    host = tower_with_a_hand_made_coder()
    reporter = Steps()
    assert apply_plan(DESIRED, FakeSessions({"tower": host}), PLAN, FAST, reporter) == [
        "replace seat coder on tower"
    ]
    order = [kind for kind, _ in host.journal if kind.startswith("docker-")]
    assert order == ["docker-stop", "docker-rm"]
    assert "by-hand" not in host.containers and host.containers["coder"].running
    said = [line.split(": ", 1)[1] for line in reporter.said]
    assert said.index("stop hand-made container coder-by-hand") < said.index(
        "remove hand-made container coder-by-hand"
    )
    assert any(s.startswith("seat coder healthy") for s in said)


def test_a_failing_seat_brings_the_hand_made_container_back() -> None:
    host = tower_with_a_hand_made_coder()
    host.crashes = {"coder": OOM}
    before = host.files[COMPOSE]
    with pytest.raises(ApplyError) as failed:
        apply_plan(DESIRED, FakeSessions({"tower": host}), PLAN, FAST, Steps())
    assert "hand-made container coder-by-hand on tower (started again)" in failed.value.rolled_back
    assert host.containers["by-hand"].running
    assert "coder" not in host.containers
    assert host.files[COMPOSE] == before
