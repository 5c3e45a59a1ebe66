"""The suite's order (tests/schedule.py): lab modules by their recorded time, longest
first; a run records the modules it ran in full and rewrites only what moved."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest

from tests import schedule


@dataclass
class Item:
    nodeid: str
    lab: bool = True
    user_properties: list[tuple[str, object]] = field(default_factory=list)

    def get_closest_marker(self, name: str) -> object | None:
        return object() if self.lab and name == "lab" else None


@dataclass
class Report:
    nodeid: str
    when: str = "call"
    duration: float = 10.0
    failed: bool = False
    skipped: bool = False

    @property
    def user_properties(self) -> list[tuple[str, object]]:
        return [schedule.LAB] if self.nodeid.startswith("lab_") else []


def items(*specs: tuple[str, bool]) -> list[pytest.Item]:
    return cast(list[pytest.Item], [Item(f"{path}::test", lab) for path, lab in specs])


def test_orders_lab_modules_longest_first_then_other_lab_modules_then_the_rest() -> None:
    found = items(("unit_a.py", False), ("lab_b.py", True), ("lab_c.py", True), ("lab_d.py", True))
    schedule.order(found, {"lab_c.py": 300.0, "lab_d.py": 20.0})
    assert [i.nodeid.split("::")[0] for i in found] == [
        "lab_c.py",
        "lab_d.py",
        "lab_b.py",
        "unit_a.py",
    ]


@pytest.mark.parametrize(
    ("recorded", "reports", "written"),
    [
        ({}, [Report("lab_b.py::test")], {"lab_b.py": 10}),
        ({"lab_b.py": 9}, [Report("lab_b.py::test")], {"lab_b.py": 9}),
        ({"lab_b.py": 5}, [Report("lab_b.py::test")], {"lab_b.py": 10}),
        ({}, [Report("lab_b.py::test", failed=True)], {}),
        ({}, [Report("lab_b.py::test", when="setup", skipped=True)], {}),
        ({}, [Report("unit_a.py::test")], {}),
        (
            {},
            [Report("lab_b.py::test", when=w, duration=1.0) for w in ("setup", "call")],
            {"lab_b.py": 2},
        ),
    ],
    ids=["new", "moved-a-little", "moved-a-lot", "failed", "skipped", "not-lab", "phases-add-up"],
)
def test_records_what_ran_in_full_and_rewrites_what_moved(
    tmp_path: Path, recorded: dict[str, float], reports: list[Report], written: dict[str, float]
) -> None:
    path = tmp_path / "durations.json"
    if recorded:
        path.write_text(json.dumps(recorded))
    recorder = schedule.Recorder()
    for report in reports:
        recorder.add(cast(Any, report))
    recorder.write(path)
    assert schedule.recorded(path) == written


def test_the_recorded_file_names_only_lab_modules_that_exist() -> None:
    repo = Path(__file__).resolve().parents[2]
    assert all((repo / module).is_file() for module in schedule.recorded())
