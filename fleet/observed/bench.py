"""Bench records: how a seat serves, measured, with its baseline and regression verdict.

Pure data and arithmetic for `fleet bench` (reconciler.workflows.bench measures; this
module summarises, compares and records). A result carries the seat's spec hash, image
id, model, date and harness version, like the inventory; it turns stale when the seat's
spec hash or image changes. The first result of a spec hash is its baseline (unless one
was set); a decode median 30% or more below it is a warning, 50% or more critical.
"""

from __future__ import annotations

import json
import statistics
from typing import Literal

from pydantic import Field, ValidationError

from fleet.base import CoreModel, Severity
from fleet.engines import ENGINES
from fleet.observed.findings import Finding, FindingKind

HARNESS_VERSION = "fleet-bench/1"
WARNING_BELOW, CRITICAL_BELOW = 0.30, 0.50
Regression = Literal["warning", "critical"]


class DecodeStats(CoreModel):
    """Decode tokens per second over the measured requests."""

    median: float
    min: float
    max: float
    n: int


class Prefill(CoreModel):
    """The deep prefill probe: how far the seat took a prompt, and how fast."""

    tokens: int
    tok_s: float | None = None
    result: Literal["clean", "failed"]
    log_line: str | None = None

    def describe(self) -> str:
        """`clean to 259,722 tokens` or `failed at 120,000 tokens`."""
        word = "clean to" if self.result == "clean" else "failed at"
        return f"{word} {self.tokens:,} tokens"


class Speculative(CoreModel):
    """Speculative decoding as the engine's counters saw it over the decode runs."""

    acceptance_rate: float
    mean_acceptance_length: float


class BenchResult(CoreModel):
    """One measurement of one seat."""

    seat: str
    host: str
    spec_hash: str | None = None
    image_id: str | None = None
    model: str | None = None
    date: str
    harness_version: str = HARNESS_VERSION
    via: Literal["seat", "gateway"] = "seat"
    decode_tok_s: DecodeStats | None = None
    ttft_s: float | None = None
    prefill: Prefill | None = None
    speculative: Speculative | None = None
    baseline: bool = Field(False, description="the baseline later runs of its spec hash meet")
    baseline_ratio: float | None = None
    regression: Regression | None = None


class BenchRecord(CoreModel):
    """Every result kept in the fleet repository, oldest first."""

    results: tuple[BenchResult, ...] = ()


def decode_rate(first: float, last: float, tokens: int) -> float | None:
    """(tokens - 1) / (time of the last token - time of the first)."""
    return (tokens - 1) / (last - first) if tokens > 1 and last > first else None


def summarize(rates: list[float]) -> DecodeStats | None:
    """Median, min and max of the per-request rates."""
    if not rates:
        return None
    return DecodeStats(
        median=round(statistics.median(rates), 2),
        min=round(min(rates), 2),
        max=round(max(rates), 2),
        n=len(rates),
    )


def speculative(accepted: float, draft_tokens: float, drafts: float) -> Speculative | None:
    """rate = accepted / draft tokens; mean length = 1 + accepted / drafts."""
    if draft_tokens <= 0 or drafts <= 0:
        return None
    return Speculative(
        acceptance_rate=round(accepted / draft_tokens, 4),
        mean_acceptance_length=round(1 + accepted / drafts, 3),
    )


def oom_line(
    lines: list[str],
    signatures: tuple[str, ...] | None = None,
    stops: tuple[str, ...] | None = None,
) -> str | None:
    """The first log line with an out-of-memory (or dead engine) signature, read up to the
    line where the engine was told to stop: a stopped engine did not run short of memory,
    and what it logs while it stops (the dead engine of a request the stop cut) is the
    stop's.

    `signatures` and `stops` are the seat's engine's (`Engine.OOM_SIGNATURES`,
    `STOP_SIGNATURES` where it has them); by default every engine's.
    """
    wanted = signatures if signatures is not None else _all_signatures()
    stopped = stops if stops is not None else stop_signatures()
    for line in lines:
        if any(s in line for s in stopped):
            return None
        if any(s in line for s in wanted):
            return line.strip()
    return None


def stop_line(lines: list[str], stops: tuple[str, ...] | None = None) -> str | None:
    """The first line where the engine says it was told to stop, else None."""
    stopped = stops if stops is not None else stop_signatures()
    return next((ln.strip() for ln in lines if any(s in ln for s in stopped)), None)


def stop_signatures(engine: str | None = None) -> tuple[str, ...]:
    """The log lines of a stop the engine was asked for: one engine's, else every engine's."""
    engines = [ENGINES[engine]] if engine is not None else list(ENGINES.values())
    return tuple(s for e in engines for s in e.STOP_SIGNATURES)


def _all_signatures() -> tuple[str, ...]:
    return tuple(s for engine in ENGINES.values() for s in engine.OOM_SIGNATURES)


def baseline_of(record: BenchRecord, seat: str, spec_hash: str | None) -> BenchResult | None:
    """The seat's baseline for that spec hash: the one set, else the first measured."""
    same = [r for r in record.results if r.seat == seat and r.spec_hash == spec_hash]
    return next((r for r in reversed(same) if r.baseline), same[0] if same else None)


def judge(result: BenchResult, baseline: BenchResult | None) -> BenchResult:
    """The result with its ratio to the baseline and its regression verdict."""
    if baseline is None or result.baseline:
        return result.model_copy(update={"baseline": True, "baseline_ratio": 1.0})
    now, then = result.decode_tok_s, baseline.decode_tok_s
    if now is None or then is None or then.median <= 0:
        return result
    ratio = round(now.median / then.median, 3)
    verdict: Regression | None = None
    if ratio <= 1 - CRITICAL_BELOW:
        verdict = "critical"
    elif ratio <= 1 - WARNING_BELOW:
        verdict = "warning"
    return result.model_copy(update={"baseline_ratio": ratio, "regression": verdict})


def against_committed(result: BenchResult, record: BenchRecord) -> BenchResult:
    """The reconcile loop's verdict: judged against the committed baseline only; with none
    committed for its spec hash the result has no ratio (the loop never makes a baseline)."""
    baseline = baseline_of(record, result.seat, result.spec_hash)
    return judge(result, baseline) if baseline is not None else result


def regression_finding(result: BenchResult) -> Finding | None:
    """A regressed result as a finding: a warning, or an error when critical."""
    if result.regression is None or result.baseline_ratio is None:
        return None
    decode = f"{result.decode_tok_s.median:.1f} tok/s, " if result.decode_tok_s else ""
    return Finding(
        kind=FindingKind.BENCH_REGRESSION,
        target=result.seat,
        message=f"{result.regression}: decode {1 - result.baseline_ratio:.0%} below its "
        f"baseline ({decode}{result.baseline_ratio:.2f}x, via {result.via})",
        severity=Severity.ERROR if result.regression == "critical" else Severity.WARNING,
    )


def latest(record: BenchRecord) -> dict[str, BenchResult]:
    """Each seat's newest result."""
    return {r.seat: r for r in record.results}


def is_stale(result: BenchResult, spec_hash: str | None, image_id: str | None) -> bool:
    """True when the seat's spec hash or image changed since it was measured."""
    return result.spec_hash != spec_hash or (bool(image_id) and result.image_id != image_id)


def read_record(text: str | None) -> BenchRecord:
    """The record file's results; an absent or unreadable file is an empty record."""
    if not text:
        return BenchRecord()
    try:
        return BenchRecord.model_validate(json.loads(text))
    except (ValueError, ValidationError, RecursionError):
        return BenchRecord()


def render_record(record: BenchRecord) -> str:
    """The record as the JSON file kept in Git (sorted keys, one result after another)."""
    return json.dumps(record.model_dump(mode="json"), indent=2, sort_keys=True) + "\n"


def depth_prompt(words: int) -> str:
    """A prompt of `words` distinct words, so no prefix cache can shortcut it."""
    return " ".join(f"w{index:07d}" for index in range(words))
