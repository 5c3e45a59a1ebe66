"""Durations in desired/ (the loop's `reconcile.bench.interval`): spelled as operators
write them, read as seconds, written back in the shortest exact spelling."""

from __future__ import annotations

import pytest

from fleet.spec.models import ReconcileSettings


@pytest.mark.parametrize(
    ("written", "seconds", "dumped"),
    [("5m", 300.0, "5m"), ("90s", 90.0, "90s"), ("1h", 3600.0, "1h"), (45, 45.0, "45s")],
    ids=["minutes", "seconds", "hours", "a-plain-number"],
)
def test_the_bench_interval_reads_as_seconds(written: object, seconds: float, dumped: str) -> None:
    settings = ReconcileSettings.model_validate({"bench": {"interval": written}})
    assert settings.bench is not None and settings.bench.interval == seconds
    assert settings.model_dump(mode="json")["bench"]["interval"] == dumped


def test_the_bench_defaults_are_the_operators_schedule() -> None:
    bench = ReconcileSettings.model_validate({"bench": {}}).bench
    assert bench is not None and (bench.interval, bench.via, bench.depth) == (300, "gateway", False)
    assert ReconcileSettings().bench is None  # the loop measures only when told to
