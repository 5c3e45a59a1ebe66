"""Every engine reads back what its processes run with, and renders exactly that.

The live side is written out by hand (`tests.unit.plan.live_argv`: each example seat's
argv as the kernel shows the engine process), never produced by the renderer: a flag the
renderer drops, renames or mis-sizes differs from it.
"""

from __future__ import annotations

import pytest

from fleet.engines import ENGINES, engine_for, read_process
from fleet.runtimes.compose import render_service
from tests.unit.engines.test_llamacpp import fleet_with
from tests.unit.plan.live_argv import LIVE_ARGV, live_argv

FLEET, _ = fleet_with()
SEATS = sorted(FLEET.seats)


@pytest.mark.parametrize("name", SEATS, ids=SEATS)
def test_the_live_argv_reads_back_as_the_desired_shape(name: str) -> None:
    seat = FLEET.seats[name]
    args, engine = read_process(live_argv(name, seat.extra_args))
    assert engine is engine_for(seat.engine)
    assert engine.observed_shape(args) == engine.desired_shape(seat)


@pytest.mark.parametrize("name", SEATS, ids=SEATS)
def test_the_renderer_renders_what_the_engine_runs_with(name: str) -> None:
    seat = FLEET.seats[name]
    service = render_service(seat, FLEET.hosts[seat.host])
    rendered, _ = read_process([*service["entrypoint"], *service["command"]])
    live, _ = read_process(live_argv(name, seat.extra_args))
    # the program differs only as the kernel spells a console script (python3 + its path)
    assert rendered.program[-1] == live.program[-1]
    assert rendered.model_copy(update={"program": ()}) == live.model_copy(update={"program": ()})


def test_every_seat_and_every_engine_is_covered() -> None:
    assert set(LIVE_ARGV) == set(SEATS)
    assert {FLEET.seats[n].engine for n in SEATS} == set(ENGINES)
