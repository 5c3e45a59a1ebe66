"""Every engine reads back exactly what it renders: the shape of a seat's rendered argv,
parsed as a live process would show it, equals the shape desired/ gives."""

from __future__ import annotations

import pytest

from fleet.engines import ENGINES, engine_for, read_process
from fleet.runtimes.compose import render_service
from tests.unit.engines.test_llamacpp import fleet_with

FLEET, _ = fleet_with()
SEATS = sorted(FLEET.seats)


@pytest.mark.parametrize("name", SEATS, ids=SEATS)
def test_rendered_argv_reads_back_as_the_desired_shape(name: str) -> None:
    seat = FLEET.seats[name]
    service = render_service(seat, FLEET.hosts[seat.host])
    args, engine = read_process([*service["entrypoint"], *service["command"]])
    assert engine is engine_for(seat.engine)
    assert engine.observed_shape(args) == engine.desired_shape(seat)


def test_every_engine_is_covered_by_the_example() -> None:
    assert {FLEET.seats[n].engine for n in SEATS} == set(ENGINES)
