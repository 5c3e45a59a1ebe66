"""The drift summary: one readable line per seat, alias or GPU that changed."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fleet.observed.models import BackendProbe, Observation
from fleet.report.drift import drift_summary, read_inventory_json
from fleet.report.inventory import build_inventory
from fleet.report.inventory_text import render_json
from tests.unit.plan.fakes import in_sync
from tests.unit.render.test_compose import example

Edit = Callable[[Observation], Observation]


def host_edit(name: str, **update: object) -> Edit:
    def edit(o: Observation) -> Observation:
        return o.model_copy(
            update={"hosts": {**o.hosts, name: o.hosts[name].model_copy(update=update)}}
        )

    return edit


def stop(seat: str, host: str) -> Edit:
    def edit(o: Observation) -> Observation:
        seats = tuple(
            s.model_copy(update={"instance": s.instance.model_copy(update={"state": "exited"})})
            if s.name == seat
            else s
            for s in o.hosts[host].seats
        )
        return host_edit(host, seats=seats)(o)

    return edit


def gpu_used(host: str, index: int, mib: int) -> Edit:
    def edit(o: Observation) -> Observation:
        gpus = tuple(
            g.model_copy(update={"memory_used_mib": mib}) if g.index == index else g
            for g in o.hosts[host].gpus
        )
        return host_edit(host, gpus=gpus)(o)

    return edit


def dead(api_base_part: str) -> Edit:
    def edit(o: Observation) -> Observation:
        assert o.gateway is not None
        probes = {
            base: BackendProbe(api_base=base, answers=False, error="refused")
            if api_base_part in base
            else probe
            for base, probe in o.gateway.probes.items()
        }
        return o.model_copy(update={"gateway": o.gateway.model_copy(update={"probes": probes})})

    return edit


CASES: list[tuple[str, Edit, list[str]]] = [
    ("in-sync", lambda o: o, []),
    ("seat-stopped", stop("coder", "tower"), ["seat coder on tower: running -> exited"]),
    ("gpu-memory", gpu_used("tower", 0, 77223), ["GPU 0 on tower: 48,943 -> 77,223 MiB used"]),
    (
        "alias-dead",
        dead(":8026/"),
        ["alias flash: answers -> dead", "alias summarizer: answers -> dead"],
    ),
    (
        "seat-gone",
        host_edit("rig", seats=()),
        ["seat llama8b on rig: gone", "seat llama8b-sgl on rig: gone"],
    ),
]


@pytest.mark.parametrize(("edit", "lines"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_summary_names_what_changed(edit: Edit, lines: list[str]) -> None:
    fleet = example()
    before = in_sync(fleet)
    committed = read_inventory_json(render_json(build_inventory(fleet, before)))
    assert committed is not None
    live = build_inventory(fleet, edit(before))
    assert list(drift_summary(committed, live)) == lines


@pytest.mark.parametrize("text", [None, "", "{", "[]", '{"fleet": 1}'], ids=str)
def test_an_unreadable_twin_is_no_inventory(text: str | None) -> None:
    assert read_inventory_json(text) is None
