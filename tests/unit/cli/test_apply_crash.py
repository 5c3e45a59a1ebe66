"""`fleet apply` killed at every step boundary of a surge, a recreate, a recreate that
hands an alias to its fallback and a blue/green switch, then run again: the next plain
apply (or loop cycle) converges with no manual step.

The kill is a failpoint (`reconciler.workflows.failpoint`, armed by `FLEET_FAILPOINT` as
a test arms it for a real process): here `die` raises `Crash`, which no `except
Exception` catches, so nothing runs that a killed process would not run (no rollback, no
lock released), and the lock's holder pid is made one that is gone. After the kill, plan
is 0 only if every alias answers through the front (and never while an alias is still
handed off to its fallback); the next apply takes the lock over,
and after it: plan and check 0, every alias of desired/ served through the front (and
chatting), no second copy of a seat, no proxy beside the live one, no lock, and not one
moment without a proxy behind the front (an untouched alias lost nothing).

Fake hosts (tests/unit/cli/fake_fleet.py, tests/fakes/gateway.py) and the real command
line; tests/integration/test_gateway_bluegreen_lab.py kills a real `fleet apply` at the
worst boundaries.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from fleet.gateways.litellm.config import parse_gateway_config
from reconciler.workflows import failpoint
from tests.fakes.gateway import FakeGateway
from tests.unit.cli.fake_fleet import MASTER_KEY, FakeFleet, make_fleet
from tests.unit.cli.test_apply_handoff import reach_tower, with_fallbacks

LOCK = ".fleet.lock"


def _surge(fake: FakeFleet) -> None:
    fake.edit("seats/coder.yaml", "aliases: [coder, autocomplete]", "aliases: [coder, fim]")
    fake.edit("seats/coder.yaml", "context: 2048", "context: 4096\nstrategy: surge")


def _recreate(fake: FakeFleet) -> None:
    fake.edit("seats/coder.yaml", "aliases: [coder, autocomplete]", "aliases: [coder, fim]")
    fake.edit("seats/coder.yaml", "context: 2048", "context: 4096\nstrategy: recreate")


def _bluegreen(fake: FakeFleet) -> None:
    fake.edit("seats/coder.yaml", "aliases: [coder, autocomplete]", "aliases: [coder, fim]")


def _handoff(fake: FakeFleet) -> None:
    """A recreate of coder whose alias `coder` flash serves meanwhile."""
    reach_tower(fake)
    with_fallbacks(fake, {"coder": ["summarizer"]})
    fake.edit("seats/coder.yaml", "context: 2048", "context: 4096\nstrategy: recreate")


CHANGES: dict[str, Callable[[FakeFleet], None]] = {
    "surge": _surge,
    "recreate": _recreate,
    "blue-green": _bluegreen,
    "handoff": _handoff,
}


def applied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeFleet:
    for name, value in MASTER_KEY.items():
        monkeypatch.setenv(name, value)
    fake = make_fleet(tmp_path, seats=("coder", "flash"))
    result = fake.fleet("apply", "--auto-approve")
    assert result.returncode == 0, result.stdout + result.stderr
    return fake


def boundaries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str) -> list[str]:
    """The failpoints an apply of `change` passes, in order (armed, but surviving)."""
    fake = applied(tmp_path / "passes", monkeypatch)
    CHANGES[change](fake)
    passed: list[str] = []
    monkeypatch.setattr(failpoint, "die", passed.append)
    monkeypatch.setenv(failpoint.ENV, ",".join(f"after:{p}" for p in failpoint.POINTS))
    result = fake.fleet("apply", "--auto-approve")
    assert result.returncode == 0, result.stdout + result.stderr
    monkeypatch.delenv(failpoint.ENV)
    return passed


def crash_at(fake: FakeFleet, monkeypatch: pytest.MonkeyPatch, point: str) -> None:
    """Run `fleet apply`, killed right after `point`."""
    gone = subprocess.Popen(["true"])
    gone.wait()

    def die(at: str) -> None:
        for host in fake.hosts.values():  # the killed apply's pid is gone
            for path in [p for p in host.files if p.endswith(LOCK)]:
                host.files[path] = host.files[path].replace(
                    f" pid {os.getpid()} ", f" pid {gone.pid} "
                )
        raise failpoint.Crash(at)

    monkeypatch.setattr(failpoint, "die", die)
    monkeypatch.setenv(failpoint.ENV, f"after:{point}")
    with pytest.raises(failpoint.Crash):
        fake.fleet("apply", "--auto-approve")
    monkeypatch.delenv(failpoint.ENV)


def handed_off(fake: FakeFleet) -> bool:
    """Whether the gateway routes `coder` to another seat (an apply died mid-handoff)."""
    config = parse_gateway_config(fake.hosts["gateway"].files["/etc/litellm/config.yaml"])
    entry = config.by_alias().get("coder")
    return entry is not None and entry.seat not in (None, "coder")


def every_alias_answers(fake: FakeFleet, front: FakeGateway) -> bool:
    wanted = {a for s in fake.load().seats.values() for a in s.aliases}
    return wanted <= set(front.serving())


def assert_converged(fake: FakeFleet, front: FakeGateway) -> None:
    plan = fake.fleet("plan")
    assert plan.returncode == 0, plan.stdout
    check = fake.fleet("check")
    assert check.returncode == 0, check.stdout + check.stderr
    assert every_alias_answers(fake, front), front.serving()
    assert list(front.proxies) == [front.routed], "a proxy runs beside the live one"
    running = [c.seat() for c in fake.hosts["tower"].containers.values() if c.running]
    assert sorted(running) == ["coder", "flash"], running
    assert not [p for h in fake.hosts.values() for p in h.files if p.endswith(LOCK)]
    assert front.unserved == []


@pytest.mark.parametrize("change", list(CHANGES), ids=list(CHANGES))
def test_an_apply_killed_at_any_boundary_is_finished_by_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    points = boundaries(tmp_path, monkeypatch, change)
    assert "apply.finished" in points and "gateway.front_switched" in points, points
    for point in dict.fromkeys(points):  # a point passed twice is killed at its first
        fake = applied(tmp_path / point, monkeypatch)
        front = fake.front
        assert front is not None
        CHANGES[change](fake)
        crash_at(fake, monkeypatch, point)
        answers = every_alias_answers(fake, front)
        if handed_off(fake):  # the fallback answers for it: only plan can tell
            assert fake.fleet("plan").returncode == 2, point
        for command in ("plan", "check"):
            after = fake.fleet(command)
            assert after.returncode != 0 or answers, (point, command, after.stdout)
        again = fake.fleet("apply", "--auto-approve")
        assert again.returncode == 0, (point, again.stdout + again.stderr)
        assert "took over the lock of an apply that is gone" in again.stdout, point
        assert "unlock" not in again.stdout + again.stderr
        assert_converged(fake, front)


def test_a_dead_front_blocks_the_gateway_wave_until_it_runs_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """nginx's master gone just before the switch: plan and check say so, apply changes
    nothing (no reload that "succeeds" then a rollback that cannot), and once the front
    runs again a plain apply converges."""
    fake = applied(tmp_path, monkeypatch)
    front = fake.front
    assert front is not None
    config = fake.hosts["gateway"].files["/etc/litellm/config.yaml"]
    _bluegreen(fake)
    front.events.clear()
    front.front_dead = True
    front.refresh()
    plan = fake.fleet("plan")
    assert plan.returncode == 1, plan.stdout
    assert "the front at http://127.0.0.13:4000 does not answer" in plan.stdout
    assert fake.fleet("check").returncode == 2
    refused = fake.fleet("apply", "--auto-approve")
    assert refused.returncode == 1 and "blocker" in refused.stderr
    assert fake.hosts["gateway"].files["/etc/litellm/config.yaml"] == config
    assert front.events == []
    front.front_dead = False
    front.refresh()
    again = fake.fleet("apply", "--auto-approve")
    assert again.returncode == 0, again.stdout + again.stderr
    assert_converged(fake, front)
