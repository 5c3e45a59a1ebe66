"""apply_plan on a fake tower: one seat created and one replaced, then the same apply failing.

The tower starts as the example fleet minus flash, with sec at an older context; the plan
creates flash and replaces sec. The health gate reads the fake's fact-script output and
asks the fake engines' /health and /v1/models, as it would on a real host.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from fleet.errors import ApplyError
from fleet.observed.models import Observation
from fleet.plan.actions import ActionKind
from fleet.plan.plan import Plan, make_plan
from fleet.runtimes.compose import render_compose
from fleet.yamltext import load_yaml
from reconciler.runtimes import compose as seat_ops
from reconciler.workflows.apply import ApplyOptions, apply_plan
from tests.fakes.clock import FakeClock
from tests.fakes.host import FakeHost, FakeSessions
from tests.unit.plan.fakes import in_sync, live_seat
from tests.unit.render.test_compose import example

# sec recreates: these cases are about create, recreate and rollback (test_surge.py surges;
# tests/unit/cli/test_apply_handoff.py hands a recreate's aliases to a fallback, which
# these tower-only sessions have no gateway for: sec keeps its aliases)
RECREATE = ("context: 262144", "context: 262144\nstrategy: recreate\nhandoff: false")
AFTER = example({"seats/sec.yaml": RECREATE})
BEFORE = example({"seats/sec.yaml": ("context: 262144", "context: 131072\nstrategy: recreate")})
COMPOSE, LOCK = "/srv/fleet/compose.yaml", "/srv/fleet/.fleet.lock"
JOURNAL = "/srv/fleet/.fleet-journal.jsonl"
FAST = ApplyOptions(seat_timeout=1.0, gateway_timeout=1.0, drain_timeout=1.0, clock=FakeClock())
OOM = "ERROR 12-01 10:00:09 [core.py:700] torch.OutOfMemoryError: CUDA out of memory."


class Steps:
    """A Reporter that keeps what apply says."""

    def __init__(self) -> None:
        self.said: list[str] = []

    def step(self, message: str) -> None:
        self.said.append(message)

    def waiting(self, reason: str, seconds: float) -> None:
        self.said.append(f"waiting: {reason}")


def before_compose() -> str:
    """The tower's compose file before the apply: no flash, sec at 131072 tokens."""
    rendered = render_compose(BEFORE, "tower")
    return seat_ops.merged_compose(BEFORE, BEFORE.hosts["tower"], rendered, {"flash": None})


def observed_before() -> Observation:
    """What observe would report about that tower (the other hosts in sync)."""
    live = in_sync(AFTER)
    tower = live.hosts["tower"]
    seats = tuple(
        live_seat(BEFORE, BEFORE.seats["sec"], max_model_len="131072") if s.name == "sec" else s
        for s in tower.seats
        if s.name != "flash"
    )
    hosts = {**live.hosts, "tower": tower.model_copy(update={"seats": seats})}
    return live.model_copy(update={"hosts": hosts})


def tower(**failures: Any) -> tuple[FakeHost, FakeSessions, Plan]:
    """The fake tower running every service of its compose file, and the plan for it."""
    text = before_compose()
    host = FakeHost("tower", files={COMPOSE: text})
    for service in load_yaml(text)["services"]:
        host.compose_up("fleet-tower", COMPOSE, str(service))
    host.started.clear()
    for name, value in failures.items():
        setattr(host, name, value)
    plan = make_plan(AFTER, observed_before())
    assert [(a.kind, a.target) for a in plan.actions] == [
        (ActionKind.CREATE_SEAT, "flash"),
        (ActionKind.REPLACE_SEAT, "sec"),
    ]
    assert not plan.blockers
    return host, FakeSessions({"tower": host}), plan


def steps(host: FakeHost) -> list[tuple[str, str | None]]:
    """(step, target) of every line of the tower's apply journal."""
    lines = [json.loads(line) for line in host.files[JOURNAL].splitlines()]
    return [(e["step"], e.get("target")) for e in lines]


def test_create_and_replace_change_only_the_named_seats() -> None:
    host, sessions, plan = tower()
    untouched = {s: c.id for s, c in host.containers.items() if s != "sec"}
    reporter = Steps()
    done = apply_plan(AFTER, sessions, plan, FAST, reporter)
    assert done == ["create seat flash on tower", "replace seat sec on tower"]
    assert host.files[COMPOSE] == render_compose(AFTER, "tower")
    assert host.files[COMPOSE + ".prev"] == before_compose()
    writes = [detail for kind, detail in host.journal if kind == "sftp-write"]
    assert writes == ["/srv/fleet/.env", COMPOSE + ".prev", COMPOSE]  # each one atomic
    assert host.modes["/srv/fleet/.env"] == 0o600
    assert host.started == ["flash", "sec"]
    assert {s: c.id for s, c in host.containers.items() if s in untouched} == untouched
    assert "262144" in host.containers["sec"].argv
    assert steps(host) == [
        ("begin", None),
        ("create-seat", "flash"),
        ("replace-seat", "sec"),
        ("finished", None),
    ]
    assert LOCK not in host.files
    assert "tower: seat flash healthy: serves flash, 98,304 KV tokens = 1.50x, on GPU 2" in (
        reporter.said
    )


ROLLBACKS: list[tuple[str, dict[str, Any], str, list[str], list[str], list[str]]] = [
    (
        "replaced-seat-fails-its-health-gate",
        {"crashes": {"sec": OOM}},
        "seat sec on tower: engine exited (torch.OutOfMemoryError: CUDA out of memory.)",
        ["flash", "sec", "sec"],
        ["compose file on tower", "seat sec on tower (serving again)"],
        ["begin", "create-seat", "rolled-back"],
    ),
    (
        "created-seat-fails-to-start",
        {"fail_on": {"up -d --no-deps flash": "exit 1: could not select device driver nvidia"}},
        "tower: `docker` exited 1: could not select device driver nvidia",
        [],
        ["compose file on tower"],
        ["begin", "rolled-back"],
    ),
]


@pytest.mark.parametrize(
    ("failures", "cause", "started", "restored", "journal"),
    [r[1:] for r in ROLLBACKS],
    ids=[r[0] for r in ROLLBACKS],
)
def test_a_failed_step_rolls_the_host_back(
    failures: dict[str, Any],
    cause: str,
    started: list[str],
    restored: list[str],
    journal: list[str],
) -> None:
    host, sessions, plan = tower(**failures)
    reporter = Steps()
    with pytest.raises(ApplyError) as caught:
        apply_plan(AFTER, sessions, plan, FAST, reporter)
    assert str(caught.value) == f"rolled back: {cause}"
    assert caught.value.rolled_back == restored
    assert host.files[COMPOSE] == before_compose()
    assert host.started == started
    assert "flash" not in host.containers
    remove = seat_ops.compose(AFTER, AFTER.hosts["tower"], "rm", "--stop", "--force", "flash")
    assert ("exec", remove) in host.journal
    assert host.containers["sec"].running and "131072" in host.containers["sec"].argv
    assert LOCK not in host.files
    assert [step for step, _ in steps(host)] == journal
    assert json.loads(host.files[JOURNAL].splitlines()[-1])["cause"] == cause
    assert f"failed: {cause}; rolling back" in reporter.said


def test_the_health_gate_polls_only_its_seat() -> None:
    """The gate asks for one container's facts, not the whole host's, at every poll."""
    host, sessions, plan = tower()
    apply_plan(AFTER, sessions, plan, FAST, Steps())
    gate = [s for s in host.scripts if "--filter" in s]
    assert gate and all("label=fleet.seat=" in s for s in gate)
    assert {re.search(r"label=fleet\.seat=(\w[\w-]*)", s).group(1) for s in gate} == {  # type: ignore[union-attr]
        "flash",
        "sec",
    }
    assert not any("config.json" in s or ".fleet.lock" in s for s in gate)
