"""A llama.cpp seat runs at the verbosity fleet needs for its facts: b11434 logs its build,
its buffers and its KV cache at `-lv 4` only (tests/corpus/llamacpp-logs). fleet renders
`-lv 4` after the seat's own flags unless they set a verbosity themselves; the flag is not
compared, so a hand-made server without it stays in sync, and one with its own verbosity
keeps it through import (its other flags become the seat's extra_args).
"""

from __future__ import annotations

import pytest

from fleet.engines.llamacpp import desired_shape, observed_shape, render_args
from fleet.engines.llamacpp.argv import parse_args
from fleet.spec.models import Seat
from tests.unit.engines.test_llamacpp import CODER, fleet_with


def coder(extra: str = "") -> Seat:
    text = CODER + (f"extra_args: {extra}\n" if extra else "")
    fleet, errors = fleet_with(text)
    assert errors == []
    return fleet.seats["gguf-coder"]


def live(argv: list[str]) -> dict[str, object]:
    return observed_shape(parse_args("llama.cpp", ["llama-server"], argv))


@pytest.mark.parametrize(
    ("extra", "tail"),
    [
        ("", ["--metrics", "-lv", "4"]),
        ('["--batch-size", "4096"]', ["--batch-size", "4096", "-lv", "4"]),
        ('["-lv", "3"]', ["--metrics", "-lv", "3"]),
        ('["--verbosity=5"]', ["--metrics", "--verbosity=5"]),
        ('["-v"]', ["--metrics", "-v"]),
        ('["-lv", "4"]', ["--metrics", "-lv", "4"]),
    ],
    ids=["none", "other-flags", "own-lv-3", "own-verbosity-5", "verbose", "own-lv-4"],
)
def test_the_verbosity_is_rendered_once_unless_the_seat_sets_its_own(
    extra: str, tail: list[str]
) -> None:
    args = render_args(coder(extra))
    assert args[-len(tail) :] == tail
    assert sum(a.partition("=")[0] in ("-lv", "--verbosity", "-v") for a in args) == 1
    assert live(args) == desired_shape(coder(extra)), "a seat fleet started is in sync"


@pytest.mark.parametrize(
    "flags",
    [[], ["-lv", "4"], ["--verbosity", "4"], ["-lv=4"]],
    ids=["without", "lv-4", "verbosity-4", "lv-equals-4"],
)
def test_a_hand_made_server_with_or_without_it_is_in_sync(flags: list[str]) -> None:
    seat = coder()
    argv = [a for a in render_args(seat) if a not in ("-lv", "4")] + flags
    assert live(argv) == desired_shape(seat)


def test_a_hand_made_verbosity_of_its_own_is_a_difference_import_keeps() -> None:
    argv = [a for a in render_args(coder()) if a not in ("-lv", "4")] + ["-lv", "2"]
    assert live(argv)["extra_args"] == ["-lv", "2"]
    assert live(argv) == desired_shape(coder('["-lv", "2"]'))
