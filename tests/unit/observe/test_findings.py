"""Findings that must not mislead: a running apply, a seat mid-replace, what holds a GPU."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fleet.facts.nvidia_smi import parse_nvidia_smi_table
from fleet.observed.assemble import assemble_host
from fleet.observed.findings import Finding, FindingKind, find_issues
from fleet.observed.models import Observation, ObservedHost
from fleet.runtimes.compose import COMPOSE
from tests.unit.facts.test_nvidia_smi import VGPU_TABLE
from tests.unit.plan.fakes import in_sync
from tests.unit.render.test_compose import example

HOLDER = "ops@ci pid 7 `fleet apply --auto-approve` since 2026-12-01T10:00:00Z"
STEPS = ("2026-12-01T10:00:01Z begin", "2026-12-01T10:00:09Z create-seat flash")


def on_tower(**update: object) -> Callable[[Observation], Observation]:
    def edit(observation: Observation) -> Observation:
        tower: ObservedHost = observation.hosts["tower"].model_copy(update=update)
        return observation.model_copy(update={"hosts": {**observation.hosts, "tower": tower}})

    return edit


def about(findings: list[Finding], *kinds: FindingKind) -> list[tuple[str, str, str]]:
    return [(f.kind.value, f.target, f.message) for f in findings if f.kind in kinds]


LOCKS = [
    (
        "live-apply-holds-the-lock",
        on_tower(lock=HOLDER, interrupted=STEPS),
        [
            (
                "host-locked",
                "tower",
                "apply in progress (by ops@ci pid 7 `fleet apply --auto-approve`, "
                "since 2026-12-01T10:00:00Z)",
            )
        ],
    ),
    (
        "journal-open-and-nobody-holds-the-lock",
        on_tower(interrupted=STEPS),
        [
            (
                "interrupted-apply",
                "tower",
                "an apply did not finish; steps done: 2026-12-01T10:00:01Z begin; "
                "2026-12-01T10:00:09Z create-seat flash. The plan shows what remains.",
            )
        ],
    ),
    ("neither", lambda o: o, []),
]


@pytest.mark.parametrize(("edit", "expected"), [c[1:] for c in LOCKS], ids=[c[0] for c in LOCKS])
def test_a_running_apply_is_in_progress_not_interrupted(
    edit: Callable[[Observation], Observation], expected: list[tuple[str, str, str]]
) -> None:
    fleet = example()
    found = find_issues(fleet, edit(in_sync(fleet)))
    assert about(found, FindingKind.HOST_LOCKED, FindingKind.INTERRUPTED_APPLY) == expected


def test_a_seat_being_replaced_is_named_once_in_the_speculative_mix() -> None:
    fleet = example()
    observation = in_sync(fleet)
    tower = observation.hosts["tower"]
    flash = tower.seat("flash")
    assert flash is not None
    old = flash.model_copy(
        update={"instance": flash.instance.model_copy(update={"id": "f" * 64, "name": "old"})}
    )
    observation = on_tower(seats=(*tower.seats, old))(observation)
    (mix,) = about(find_issues(fleet, observation), FindingKind.SPECULATIVE_MIX)
    assert "flash, flash" not in mix[2]
    assert mix[2].count("flash") == 1


def test_the_live_commit_is_the_newest_finished_apply() -> None:
    fleet = example()
    observation = in_sync(fleet)
    assert observation.live_commit is None
    observation = on_tower(applied_commit="aaa", applied_at="2026-12-01T10:00:00Z")(observation)
    rig = observation.hosts["rig"].model_copy(
        update={"applied_commit": "bbb", "applied_at": "2026-12-02T10:00:00Z"}
    )
    observation = observation.model_copy(update={"hosts": {**observation.hosts, "rig": rig}})
    assert observation.live_commit == "bbb"


def test_a_vgpu_row_without_columns_says_what_nvidia_smi_lacks() -> None:
    """A vGPU guest's table row (tests/unit/facts/test_nvidia_smi.py VGPU_TABLE) gives its
    GPU; the inventory and plan say what it did not print instead of reading 0 MiB."""
    output = (
        "\n@@FLEET gpus\nFailed to query: field not supported\n@@FLEET gpus-rc 2\n"
        f"@@FLEET gpu-table\n{VGPU_TABLE}\n@@FLEET docker-rc 0\n@@FLEET end\n"
    )
    assert parse_nvidia_smi_table(VGPU_TABLE).gpus[0].missing  # the fact names it
    host = assemble_host("guest", output, COMPOSE)
    assert [(g.index, g.name, g.missing) for g in host.gpus] == [
        (0, "GRID A100D-40C", ("persistence mode", "memory usage"))
    ]
    live = in_sync(example())
    observation = live.model_copy(update={"hosts": {**live.hosts, "guest": host}})
    found = [f for f in find_issues(example(), observation) if f.target == "guest"]
    assert [(f.kind, f.message) for f in found] == [
        (
            FindingKind.GPU_FACTS_MISSING,
            "nvidia-smi's row of GPU 0 has no persistence mode and no memory usage "
            "(a vGPU guest prints none): what depends on it is not checked",
        )
    ]
