"""The seat wave across hosts: each host's seats in order, the hosts at the same time, and
everything rolled back on every host when one fails. On fake hosts; no timing asserted."""

from __future__ import annotations

import threading

import pytest

from fleet.errors import ApplyError
from fleet.observed.models import Observation
from fleet.plan.actions import ActionKind
from fleet.plan.plan import Plan, make_plan
from fleet.runtimes.compose import render_compose
from reconciler.workflows.apply import ApplyOptions, apply_plan
from tests.fakes.clock import FakeClock
from tests.fakes.host import FakeHost, FakeSessions
from tests.unit.plan.fakes import in_sync
from tests.unit.render.test_compose import example
from tests.unit.workflows.test_apply import COMPOSE, JOURNAL, LOCK, OOM, Steps

DESIRED = example()
NEW = {"tower": "coder", "rig": "llama8b"}  # one seat to create on each host
FAST = ApplyOptions(seat_timeout=5.0, gateway_timeout=1.0, drain_timeout=1.0, clock=FakeClock())


def missing_new_seats() -> Observation:
    live = in_sync(DESIRED)
    hosts = {
        name: host.model_copy(
            update={
                "seats": tuple(s for s in host.seats if s.name != NEW.get(name)),
                "gpus": tuple(g.model_copy(update={"memory_used_mib": 0}) for g in host.gpus),
            }
        )
        for name, host in live.hosts.items()
    }
    return live.model_copy(update={"hosts": hosts})


def fleet_of_fakes() -> tuple[dict[str, FakeHost], FakeSessions, Plan]:
    hosts = {}
    for name, gpus in (("tower", 4), ("rig", 2)):
        text = render_compose(DESIRED, name)
        host = FakeHost(name, files={COMPOSE: text}, gpus=gpus)
        for seat in DESIRED.seats_on(name):
            if seat.name != NEW[name]:
                host.compose_up(f"fleet-{name}", COMPOSE, seat.name)
        host.started.clear()
        hosts[name] = host
    plan = make_plan(DESIRED, missing_new_seats())
    seat_actions = [(a.kind, a.host, a.target) for a in plan.actions if a.wave == 1]
    assert seat_actions == [
        (ActionKind.CREATE_SEAT, "rig", "llama8b"),
        (ActionKind.CREATE_SEAT, "tower", "coder"),
    ]
    assert not plan.blockers
    seat_only = plan.model_copy(update={"actions": tuple(a for a in plan.actions if a.wave == 1)})
    return hosts, FakeSessions(hosts), seat_only


def test_hosts_start_their_seats_at_the_same_time() -> None:
    """Each host's engine start waits for the other's: only concurrent hosts get through."""
    hosts, sessions, plan = fleet_of_fakes()
    both = threading.Barrier(2, timeout=10)
    for host in hosts.values():
        host.before_up = lambda service: both.wait()
    reporter = Steps()
    done = apply_plan(DESIRED, sessions, plan, FAST, reporter)
    assert sorted(done) == ["create seat coder on tower", "create seat llama8b on rig"]
    assert hosts["tower"].started == ["coder"] and hosts["rig"].started == ["llama8b"]
    assert all(line.split(":")[0] in ("tower", "rig") for line in reporter.said)
    assert all(LOCK not in h.files for h in hosts.values())


def test_one_host_failing_rolls_back_every_host() -> None:
    hosts, sessions, plan = fleet_of_fakes()
    before = {name: h.files[COMPOSE] for name, h in hosts.items()}
    hosts["rig"].crashes = {"llama8b": OOM}
    with pytest.raises(ApplyError) as failed:
        apply_plan(DESIRED, sessions, plan, FAST, Steps())
    assert str(failed.value).startswith("rolled back: seat llama8b on rig: engine exited")
    for name, host in hosts.items():
        assert host.files[COMPOSE] == before[name]
        assert NEW[name] not in host.containers
        assert LOCK not in host.files
        assert '"step": "rolled-back"' in host.files[JOURNAL].splitlines()[-1]
