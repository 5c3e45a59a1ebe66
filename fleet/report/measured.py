"""The inventory's "Measured" table: each seat's newest bench result, stale or not.

Called by `fleet.report.inventory` (rows) and `fleet.report.inventory_text` (Markdown).
A row is **stale** when the seat's spec hash or image changed since it was measured, so
an inventory never passes an old figure off as the seat's.
"""

from __future__ import annotations

from fleet.base import CoreModel
from fleet.names import HASH_LABEL
from fleet.observed.bench import BenchRecord, is_stale, latest
from fleet.observed.models import Observation


class MeasuredRow(CoreModel):
    """One seat's newest measurement, as the inventory shows it."""

    seat: str
    decode_tok_s: float | None = None
    ttft_s: float | None = None
    prefill_tok_s: float | None = None
    depth: str | None = None
    acceptance: str | None = None
    regression: str | None = None
    date: str
    stale: bool = False


def measured_rows(observation: Observation, record: BenchRecord | None) -> tuple[MeasuredRow, ...]:
    """Rows for every seat with a result, sorted by seat."""
    if record is None:
        return ()
    rows = []
    for name, result in sorted(latest(record).items()):
        found = observation.seat(name)
        container = found[1].instance if found else None
        spec_hash = container.labels.get(HASH_LABEL) if container else None
        spec = result.speculative
        rows.append(
            MeasuredRow(
                seat=name,
                decode_tok_s=result.decode_tok_s.median if result.decode_tok_s else None,
                ttft_s=result.ttft_s,
                prefill_tok_s=result.prefill.tok_s if result.prefill else None,
                depth=result.prefill.describe() if result.prefill else None,
                acceptance=f"{spec.acceptance_rate:.1%} / {spec.mean_acceptance_length:.2f}"
                if spec
                else None,
                regression=result.regression,
                date=result.date,
                stale=container is None or is_stale(result, spec_hash, container.image_id),
            )
        )
    return tuple(rows)


def measured_lines(rows: tuple[MeasuredRow, ...]) -> list[str]:
    """The Markdown table (nothing when no seat was measured)."""
    if not rows:
        return []
    lines = [
        "## Measured",
        "",
        "| seat | decode tok/s | TTFT | prefill tok/s | depth | acceptance / mean length | date |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for row in rows:
        flag = " **stale**" if row.stale else ""
        flag += f" **{row.regression}**" if row.regression else ""
        lines.append(
            f"| `{row.seat}`{flag} | {_n(row.decode_tok_s, '{:.1f}')} | "
            f"{_n(row.ttft_s, '{:.3f} s')} | {_n(row.prefill_tok_s, '{:,.0f}')} | "
            f"{row.depth or '-'} | {row.acceptance or '-'} | {row.date} |"
        )
    return [*lines, ""]


def _n(value: float | None, spelling: str) -> str:
    return "-" if value is None else spelling.format(value)
