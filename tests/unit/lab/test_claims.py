"""Slots are claimed machine-wide: a lab takes its own slot or the next free one, never
one another lab holds, and the last lab down removes the shared directories."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lab import claims, slots
from tests.lab.procs import LabError
from tests.lab.state import LabState


@pytest.fixture
def run_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private stand-in for /run/fleet-lab."""
    root = tmp_path / "run" / "fleet-lab"
    monkeypatch.setattr(slots, "RUN_ROOT", root)
    yield root


def state_of(base: Path, name: str) -> LabState:
    """The (empty) state of a lab directory under `base`."""
    return LabState(base / name / "state.json")


def test_a_free_slot_is_taken_and_recorded(tmp_path: Path, run_root: Path) -> None:
    state = state_of(tmp_path, "a")
    assert claims.claim(state, 4, explicit=False) == 4
    assert (run_root / "4" / "owner").read_text().strip() == str(state.root)
    assert LabState.load(state.path).slot == 4


def test_a_held_slot_moves_a_hashed_lab_on_and_refuses_an_explicit_one(
    tmp_path: Path, run_root: Path
) -> None:
    first, second = state_of(tmp_path, "a"), state_of(tmp_path, "b")
    claims.claim(first, slots.SLOTS - 1, explicit=False)
    assert claims.claim(second, slots.SLOTS - 1, explicit=False) == 0, "wraps around"
    with pytest.raises(LabError, match=re.escape(f"held by the lab in {first.root}")):
        claims.claim(state_of(tmp_path, "c"), slots.SLOTS - 1, explicit=True)
    assert claims.holder(slots.SLOTS - 1, second.root) == first.root
    assert claims.holder(slots.SLOTS - 1, first.root) is None, "its own claim"


def test_a_crashed_lab_keeps_its_slot_until_its_own_down(tmp_path: Path, run_root: Path) -> None:
    crashed = state_of(tmp_path, "crashed")
    claims.claim(crashed, 7, explicit=False)  # its processes are long gone; its state is not
    assert claims.claim(state_of(tmp_path, "new"), 7, explicit=False) == 8
    claims.release(crashed)
    crashed.path.unlink()
    assert claims.claim(state_of(tmp_path, "newer"), 7, explicit=False) == 7


def test_a_stale_claim_is_taken_over(tmp_path: Path, run_root: Path) -> None:
    gone = state_of(tmp_path, "gone")
    claims.claim(gone, 3, explicit=True)
    gone.path.unlink()  # its directory was deleted without a down
    newcomer = state_of(tmp_path, "newcomer")
    assert claims.claim(newcomer, 3, explicit=True) == 3
    assert claims.owner_of(3) == newcomer.root


def test_every_slot_held_is_an_error(tmp_path: Path, run_root: Path) -> None:
    for n in range(slots.SLOTS):
        claims.claim(state_of(tmp_path, f"lab{n}"), n, explicit=True)
    with pytest.raises(LabError, match="all 16 lab slots"):
        claims.claim(state_of(tmp_path, "one-too-many"), 0, explicit=False)


def test_the_last_lab_down_removes_the_shared_dirs(tmp_path: Path, run_root: Path) -> None:
    first, second = state_of(tmp_path, "a"), state_of(tmp_path, "b")
    claims.claim(first, 1, explicit=True)
    claims.claim(second, 2, explicit=True)
    shared = tmp_path / "machine" / "models"
    claims.make_machine_dir(first, shared)
    claims.make_machine_dir(second, shared)  # already there: not second's
    assert first.created_dirs == [str(shared)] and second.created_dirs == []
    claims.release(first)
    first.path.unlink()
    assert shared.is_dir(), "second still runs: its hosts bind this directory"
    assert json.loads((run_root / "machine-dirs").read_text()) == [str(shared)]
    assert not (run_root / "1").exists() and (run_root / "2" / "owner").is_file()
    claims.release(second)
    second.path.unlink()
    assert not shared.exists() and not run_root.exists(), "nothing left once all are down"


def test_a_lab_of_the_layout_before_slots_keeps_the_shared_dirs(
    tmp_path: Path, run_root: Path
) -> None:
    state = state_of(tmp_path, "a")
    claims.claim(state, 5, explicit=True)
    shared = tmp_path / "machine" / "srv-fleet"
    claims.make_machine_dir(state, shared)
    (run_root / "tower").mkdir()  # /run/fleet-lab/<host> of an older checkout's lab
    claims.release(state)
    assert shared.is_dir()
    assert not (run_root / "5").exists()


def test_release_of_an_unclaimed_state_changes_nothing(tmp_path: Path, run_root: Path) -> None:
    claims.release(state_of(tmp_path, "never-up"))
    assert not run_root.exists()
