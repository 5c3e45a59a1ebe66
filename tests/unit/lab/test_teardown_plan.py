"""A down removes only what its own state recorded: never another lab's namespaces,
bridges, compose bridges or run dirs, even when its own state is stale; and it kills
what is left in its namespaces until it stays gone, or names what it could not end."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lab import teardown
from tests.lab.lab import Lab
from tests.lab.procs import ProcRecord
from tests.lab.state import LabState
from tests.lab.teardown import Footprint, footprint


def recorded(lab: Lab, namespace_base: int) -> LabState:
    """The state `up` records for `lab` (namespaces numbered from `namespace_base`)."""
    state = LabState(lab.root / "state.json", slot=lab.slot.index)
    for n, host in enumerate(lab.hosts.values()):
        state.procs.append(ProcRecord("dockerd", host.name, 1000 + namespace_base + n, 1))
        state.namespaces.append(f"mnt:[{namespace_base + n}]")
        state.bridges.append(host.bridge)
        state.pools.append(host.pool)
        state.hosts[host.name] = {
            "root": str(host.root),
            "run_dir": str(host.run_dir),
            "docker_host": host.docker_host,
        }
    return state


def links_of(*labs: Lab) -> dict[str, list[str]]:
    """The machine's interfaces with both labs up: host bridges and a compose bridge each."""
    links: dict[str, list[str]] = {"lo": ["127.0.0.1"], "eth0": ["192.0.2.2"]}
    for lab in labs:
        for host in lab.hosts.values():
            links[host.bridge] = [host.bridge_cidr.split("/")[0]]
            links[f"br-{lab.slot.index:02d}{host.name}"[:15]] = [
                host.pool.split("/")[0][:-3] + "129"
            ]
    return links


def names(plan: Footprint) -> set[str]:
    """Everything a plan would remove."""
    return {*plan.namespaces, *plan.bridges, *plan.run_dirs}


def test_a_down_names_its_own_and_none_of_another_labs(tmp_path: Path) -> None:
    one = Lab(root=tmp_path / "one", slot=3)
    two = Lab(root=tmp_path / "two", slot=11)
    mine, theirs = recorded(one, 100), recorded(two, 200)
    links = links_of(one, two)
    plan = footprint(mine, [theirs], links)
    assert set(plan.bridges) == {b for b in links if b.startswith(("f3-", "br-03"))}
    assert plan.namespaces == set(mine.namespaces)
    assert set(plan.run_dirs) == {str(h.run_dir) for h in one.hosts.values()}
    other = set(theirs.namespaces) | {b for b in links if b.startswith(("f11-", "br-11"))}
    other |= {str(h.run_dir) for h in two.hosts.values()}
    assert not names(plan) & other
    assert not names(footprint(theirs, [mine], links)) & names(plan)


def test_a_stale_state_whose_slot_was_taken_over_removes_no_slot_names(tmp_path: Path) -> None:
    stale = recorded(Lab(root=tmp_path / "crashed-before-reboot", slot=6), 300)
    successor_lab = Lab(root=tmp_path / "successor", slot=6)
    successor = recorded(successor_lab, 300)  # namespace ids recycled, too
    plan = footprint(stale, [successor], links_of(successor_lab))
    assert plan == Footprint(frozenset(), (), ())


def test_recorded_names_another_lab_also_recorded_are_left_alone(tmp_path: Path) -> None:
    one = Lab(root=tmp_path / "one", slot=0)
    two = Lab(root=tmp_path / "two", slot=1)
    mine, theirs = recorded(one, 400), recorded(two, 500)
    mine.bridges.append(theirs.bridges[0])  # however it got there
    mine.namespaces.append(theirs.namespaces[0])
    plan = footprint(mine, [theirs], links_of(one, two))
    assert theirs.bridges[0] not in plan.bridges
    assert theirs.namespaces[0] not in plan.namespaces


def test_a_state_from_before_slots_sweeps_no_address_range(tmp_path: Path) -> None:
    legacy = LabState(tmp_path / "old" / "state.json", bridges=["fl-tower"])
    links = links_of(Lab(root=tmp_path / "one", slot=2)) | {"br-0123456789ab": ["172.31.8.1"]}
    assert footprint(legacy, [], links).bridges == ("fl-tower",)


@pytest.mark.parametrize(
    ("scans", "timeout", "killed", "left"),
    [
        pytest.param([[7], [], []], 30.0, [[7]], [], id="gone-after-one-kill"),
        pytest.param([[7], [], [9], [], []], 30.0, [[7], [9]], [], id="a-fork-seen-only-later"),
        pytest.param([[7]] * 100, 0.25, [[7]], [7], id="unkillable-is-named"),
    ],
)
def test_leftovers_are_killed_until_two_scans_in_a_row_find_none(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    scans: list[list[int]],
    timeout: float,
    killed: list[list[int]],
    left: list[int],
) -> None:
    found = iter(scans)
    kills: list[list[int]] = []
    monkeypatch.setattr(teardown, "lab_leftovers", lambda state, plan: next(found))
    monkeypatch.setattr(teardown.procs, "kill", lambda pids: kills.append(pids) if pids else None)
    state = recorded(Lab(root=tmp_path / "one", slot=4), 600)
    assert teardown.kill_leftovers(state, Footprint(frozenset(), (), ()), timeout) == left
    assert kills[: len(killed)] == killed
    assert all(pids == killed[-1] for pids in kills[len(killed) :])
