"""The words of `fleet models`: a fetch's progress, prune's age and what it may touch."""

from __future__ import annotations

import pytest

from fleet.facts.instance import Instance
from fleet.observed.models import ObservedHost, ObservedSeat
from fleet.report.models import abandoned_partials, parse_age, progress_line, within_root
from tests.unit.render.test_compose import example

PROGRESS = [
    (
        "midway",
        12_000_000_000,
        65_500_000_000,
        100.0,
        "12.0 GB of 65.5 GB (18%), 120 MB/s, ETA 7m25s",
    ),
    ("long", 1_000_000_000, 400_000_000_000, 100.0, "1.0 GB of 400 GB (0%), 10.0 MB/s, ETA 11h05m"),
    ("not-started", 0, 1000, 0.0, "0 B of 1.0 kB (0%), 0 B/s"),
    ("size-unknown", 5_000_000, 0, 10.0, "5.0 MB copied, 500 kB/s"),
]


@pytest.mark.parametrize(
    ("copied", "total", "seconds", "line"), [c[1:] for c in PROGRESS], ids=[c[0] for c in PROGRESS]
)
def test_progress_line(copied: int, total: int, seconds: float, line: str) -> None:
    assert progress_line(copied, total, seconds) == line


@pytest.mark.parametrize(
    ("text", "seconds"), [("30d", 2_592_000), ("12h", 43_200), ("90m", 5400), ("45s", 45)]
)
def test_age(text: str, seconds: int) -> None:
    assert parse_age(text) == seconds


@pytest.mark.parametrize("text", ["30", "d", "3w", "-1d", "1.5d"])
def test_bad_age_says_what_it_takes(text: str) -> None:
    with pytest.raises(ValueError, match="--older-than takes a number and d, h, m or s"):
        parse_age(text)


ROOTS = [
    ("entry", "/models", "/models/Qwen3-32B", True),
    ("gguf", "/models/", "/models/q.gguf", True),
    ("nested", "/models", "/models/org/Qwen3-32B", False),
    ("outside", "/models", "/srv/Qwen3-32B", False),
    ("the-root-itself", "/models", "/models", False),
    ("partial-copy", "/models", "/models/.Qwen3-32B.partial", False),
    ("dot-dot", "/models", "/models/../etc", False),
]


@pytest.mark.parametrize(
    ("root", "path", "inside"), [c[1:] for c in ROOTS], ids=[c[0] for c in ROOTS]
)
def test_prune_stays_inside_the_models_root(root: str, path: str, inside: bool) -> None:
    assert within_root(root, path) is inside


def test_a_partial_a_running_seat_loads_is_not_abandoned() -> None:
    desired = example()
    host = desired.hosts["tower"]
    root = host.models_root.rstrip("/")
    held, old = f"{root}/.held.partial", f"{root}/.old.partial"
    container = Instance(id="c", name="hand", state="running", image="i")
    seat = ObservedSeat(name="hand", managed=False, instance=container, model=held + "/")
    observed = ObservedHost(name="tower", seats=(seat,), partials={held: 1, old: 2})
    assert [row.path for row in abandoned_partials(desired, observed)] == [old]
