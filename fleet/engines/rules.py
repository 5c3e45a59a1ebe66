"""The offline rules that need to know the engines: a known `engine`, and each engine's own.

`validate_fleet` is `fleet.spec.validate`'s
engine-neutral rules plus `check_engines`, which names an unknown engine (with the known
ones) and hands every other seat to its engine module's `check_seat` (which budget fields
apply, GPUs, speculative methods). It lives here, above `fleet.spec`, so that the spec
layer never imports an engine. `fleet.runtimes.validate_fleet` adds the host runtimes'
rules (a seat's image) and is what the commands run.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from fleet.engines.base import Engine
from fleet.spec.load import LoadedFleet, Sources
from fleet.spec.models import DesiredFleet
from fleet.spec.problems import Problem
from fleet.spec.seat_rules import seat_file
from fleet.spec.validate import Rule
from fleet.spec.validate import validate_fleet as validate_spec


def check_engines(
    desired: DesiredFleet, src: Sources, engines: Mapping[str, Engine]
) -> Iterator[Problem]:
    """Each seat's engine is known, and its engine's rules hold."""
    for seat in sorted(desired.seats.values(), key=lambda s: s.name):
        engine = engines.get(seat.engine)
        if engine is None:
            known = [repr(name) for name in engines]
            expected = f"{', '.join(known[:-1])} or {known[-1]}" if len(known) > 1 else known[0]
            yield src.problem(
                seat_file(seat),
                ("engine",),
                f"engine: expected one of {expected}, got {seat.engine!r}",
            )
            continue
        yield from engine.check_seat(seat, src)


def validate_fleet(
    loaded: LoadedFleet, engines: Mapping[str, Engine], more: tuple[Rule, ...] = ()
) -> list[Problem]:
    """Every problem in desired/, the engines' rules included (and `more`, from above)."""

    def engine_rules(desired: DesiredFleet, src: Sources) -> Iterator[Problem]:
        return check_engines(desired, src, engines)

    return validate_spec(loaded, (engine_rules, *more))
