"""The inventory document: deterministic but for its timestamp, and what check compares."""

from __future__ import annotations

import json

from fleet.report.inventory import build_inventory
from fleet.report.inventory_text import inventory_diff, render_json, render_markdown
from tests.unit.plan.fakes import in_sync
from tests.unit.render.test_compose import example


def test_two_generations_differ_only_in_the_timestamp_line() -> None:
    fleet = example()
    first = in_sync(fleet)
    later = first.model_copy(update={"observed_at": "2026-12-03T09:30:00Z"})
    a, b = (
        render_markdown(build_inventory(fleet, first)),
        render_markdown(build_inventory(fleet, later)),
    )
    changed = [x for x, y in zip(a.splitlines(), b.splitlines(), strict=True) if x != y]
    assert changed == ["Generated at: 2026-12-02T00:00:00Z"]
    assert inventory_diff(a, b) == []
    ja, jb = render_json(build_inventory(fleet, first)), render_json(build_inventory(fleet, later))
    assert [x for x, y in zip(ja.splitlines(), jb.splitlines(), strict=True) if x != y] == [
        '  "generated_at": "2026-12-02T00:00:00Z",'
    ]
    assert json.loads(ja)["hosts"][2]["name"] == "tower"


def test_a_stopped_seat_shows_in_the_diff() -> None:
    fleet = example()
    live = in_sync(fleet)
    tower = live.hosts["tower"]
    seats = tuple(
        s.model_copy(update={"instance": s.instance.model_copy(update={"state": "exited"})})
        if s.name == "coder"
        else s
        for s in tower.seats
    )
    stopped = live.model_copy(
        update={"hosts": {**live.hosts, "tower": tower.model_copy(update={"seats": seats})}}
    )
    delta = inventory_diff(
        render_markdown(build_inventory(fleet, live)),
        render_markdown(build_inventory(fleet, stopped)),
        name="INV.md",
    )
    assert delta[:2] == ["--- INV.md (committed)\n", "+++ live fleet\n"]
    assert any(line.startswith("+| `coder` **exited** |") for line in delta)


def test_a_tensor_parallel_seat_shows_each_gpus_share_and_its_total_once() -> None:
    """reason runs on GPUs 2 and 3 with 20,480 MiB in all: 10,240 under each GPU."""
    fleet = example()
    text = render_markdown(build_inventory(fleet, in_sync(fleet)))
    tower = text.split("## Host `tower`")[1].split("## Host")[0]
    gpu2, gpu3 = tower.split("### GPU 2:")[1].split("### GPU 3:")
    row2 = next(line for line in gpu2.splitlines() if line.startswith("| `reason`"))
    row3 = next(line for line in gpu3.splitlines() if line.startswith("| `reason`"))
    assert "| 10,240 (20,480 over GPUs 2, 3) |" in row2
    assert "| 10,240 |" in row3 and "20,480" not in row3
    assert "reason 10,240 MiB" in gpu2 and "reason 10,240 MiB" in gpu3  # the bars agree
