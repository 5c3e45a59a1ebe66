"""Bench results: the arithmetic, the baseline verdicts, staleness, and the Measured table."""

from __future__ import annotations

import pytest

from fleet.names import HASH_LABEL
from fleet.observed.bench import (
    BenchRecord,
    BenchResult,
    DecodeStats,
    Prefill,
    baseline_of,
    decode_rate,
    depth_prompt,
    judge,
    oom_line,
    read_record,
    render_record,
    speculative,
)
from fleet.report.measured import measured_lines, measured_rows
from tests.unit.plan.fakes import in_sync
from tests.unit.render.test_compose import example


def result(median: float, spec_hash: str = "h1", **update: object) -> BenchResult:
    stats = DecodeStats(median=median, min=median, max=median, n=3)
    return BenchResult(
        seat="flash", host="tower", spec_hash=spec_hash, date="D", decode_tok_s=stats, **update
    )  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("now", "ratio", "regression"),
    [
        (100.0, 1.0, None),
        (80.0, 0.8, None),
        (70.0, 0.7, "warning"),
        (60.0, 0.6, "warning"),
        (50.0, 0.5, "critical"),
        (40.0, 0.4, "critical"),
        (130.0, 1.3, None),
    ],
    ids=["same", "20%-slower", "30%-slower", "40%-slower", "50%-slower", "60%-slower", "faster"],
)
def test_regressions_against_the_baseline(now: float, ratio: float, regression: str | None) -> None:
    judged = judge(result(now), result(100.0, baseline=True))
    assert (judged.baseline_ratio, judged.regression) == (ratio, regression)


def test_the_first_result_of_a_spec_hash_is_its_baseline_unless_one_was_set() -> None:
    first, second, third = result(100.0), result(90.0), result(120.0, baseline=True)
    assert baseline_of(BenchRecord(), "flash", "h1") is None
    assert judge(first, None).baseline
    assert baseline_of(BenchRecord(results=(first, second)), "flash", "h1") == first
    assert baseline_of(BenchRecord(results=(first, second, third)), "flash", "h1") == third
    assert baseline_of(BenchRecord(results=(first,)), "flash", "h2") is None  # a new spec


def test_the_arithmetic() -> None:
    assert decode_rate(1.0, 2.0, 51) == 50.0
    assert decode_rate(1.0, 1.0, 5) is None and decode_rate(1.0, 2.0, 1) is None
    spec = speculative(accepted=210, draft_tokens=300, drafts=100)
    assert spec is not None and (spec.acceptance_rate, spec.mean_acceptance_length) == (0.7, 3.1)
    assert speculative(0, 0, 0) is None
    words = depth_prompt(1000).split()
    assert len(words) == len(set(words)) == 1000
    log = ["INFO ok", "ERROR torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB"]
    assert oom_line(log) == log[1] and oom_line(log[:1]) is None


def test_the_record_reads_back_what_it_wrote() -> None:
    record = BenchRecord(results=(result(100.0, prefill=Prefill(tokens=10, result="clean")),))
    assert read_record(render_record(record)) == record
    assert read_record("{not json") == BenchRecord() and read_record(None) == BenchRecord()


def test_the_measured_table_marks_a_changed_seat_stale() -> None:
    fleet = example()
    observation = in_sync(fleet)
    found = observation.seat("flash")
    assert found is not None
    live = found[1].instance
    fresh = result(100.0, spec_hash=live.labels[HASH_LABEL], image_id=live.image_id)
    rows = measured_rows(observation, BenchRecord(results=(fresh,)))
    assert [r.stale for r in rows] == [False]
    old = fresh.model_copy(update={"spec_hash": "before-the-context-changed"})
    (row,) = measured_rows(observation, BenchRecord(results=(old,)))
    assert row.stale
    assert "| `flash` **stale** | 100.0 |" in "\n".join(measured_lines((row,)))
