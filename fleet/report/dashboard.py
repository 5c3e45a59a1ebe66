"""The dashboard page: `fleet status` as HTML, with bench history charts and recent runs.

Pure: `render_page` turns a `FleetStatus`, each seat's bench history (`bench_series`) and
the recent plans and applies (`History`) into one HTML document; `page_data` is the same
as the JSON the page's server also answers (`/status.json`). Every string lands in the
page through `html.escape` (attributes quoted), and the chart data as a JSON data block
whose `<`, `>` and `&` are escaped: what a host or the gateway returned (a model name, a
finding's message) stays text. The page loads only what its own server serves (`ASSETS`:
the vendored Chart.js, the page's script and style), so it works with no network beyond
the host, and refreshes itself every `refresh` seconds (`dashboard.js`). Served by
`reconciler.adapters.dashboard`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from html import escape
from typing import Any

from pydantic import Field

from fleet.base import CoreModel
from fleet.observed.bench import (
    CRITICAL_BELOW,
    WARNING_BELOW,
    BenchRecord,
    BenchResult,
    baseline_of,
)
from fleet.report.status import FleetStatus, GpuStatus, HostStatus, SeatStatus
from fleet.report.status_text import printable

ASSETS = ("chart.umd.min.js", "dashboard.js", "dashboard.css")
HISTORY = 20  # plans and applies kept for the page
SEAT_COLUMNS: tuple[str, ...] = (
    "seat",
    "state",
    "GPUs",
    "port",
    "run",
    "wait",
    "KV use",
    "concurrency",
)
SEAT_COLUMNS += ("band", "bench", "aliases")


class Run(CoreModel):
    """One plan or apply the page lists."""

    at: str
    kind: str = Field(description="plan or apply")
    summary: str
    desired_commit: str | None = None
    live_commit: str | None = None
    result: str | None = None


class History(CoreModel):
    """The newest plans and applies, newest first."""

    plans: tuple[Run, ...] = ()
    applies: tuple[Run, ...] = ()

    def add(self, run: Run) -> History:
        """With `run` added (an apply already listed is not listed twice)."""
        if run.kind == "apply":
            if run in self.applies:
                return self
            return self.model_copy(update={"applies": (run, *self.applies)[:HISTORY]})
        return self.model_copy(update={"plans": (run, *self.plans)[:HISTORY]})


class BenchSeries(CoreModel):
    """A seat's decode tok/s over time, and its baseline."""

    seat: str
    dates: tuple[str, ...] = ()
    decode: tuple[float, ...] = ()
    baseline: float | None = None
    warning: float | None = Field(None, description="the baseline less 30%")
    critical: float | None = Field(None, description="the baseline less 50%")


def bench_series(
    record: BenchRecord, measured: Mapping[str, BenchResult] | None = None
) -> tuple[BenchSeries, ...]:
    """Each seat's measured decode medians, oldest first (the committed record, then the
    loop's own newer results), with the baseline of its newest spec hash."""
    results = list(record.results)
    results += [r for r in (measured or {}).values() if r not in record.results]
    series = []
    for seat in sorted({r.seat for r in results}):
        mine = sorted(
            (r for r in results if r.seat == seat and r.decode_tok_s), key=lambda r: r.date
        )
        if not mine:
            continue
        base = baseline_of(record, seat, mine[-1].spec_hash)
        value = base.decode_tok_s.median if base and base.decode_tok_s else None
        series.append(
            BenchSeries(
                seat=seat,
                dates=tuple(r.date for r in mine),
                decode=tuple(r.decode_tok_s.median for r in mine if r.decode_tok_s),
                baseline=value,
                warning=round(value * (1 - WARNING_BELOW), 2) if value else None,
                critical=round(value * (1 - CRITICAL_BELOW), 2) if value else None,
            )
        )
    return tuple(series)


def page_data(
    status: FleetStatus, series: tuple[BenchSeries, ...], history: History
) -> dict[str, Any]:
    """What the page shows, as JSON (`/status.json`)."""
    return {
        "status": status.model_dump(mode="json"),
        "bench": [s.model_dump(mode="json") for s in series],
        "history": history.model_dump(mode="json"),
    }


def _e(value: object) -> str:
    return escape(printable("" if value is None else value), quote=True)


def _json_block(data: object) -> str:
    text = json.dumps(data, sort_keys=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_page(
    status: FleetStatus, series: tuple[BenchSeries, ...], history: History, refresh: int
) -> str:
    """The whole page."""
    title = f"fleet {_e(status.fleet)}"
    body = [
        _header(status, title),
        '<section id="hosts">',
        *(_host(h) for h in status.hosts),
        "</section>",
        _aliases(status),
        _bench(series),
        _findings(status),
        _history(history),
    ]
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{title}</title>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<link rel="stylesheet" href="/assets/dashboard.css">'
        '<script src="/assets/chart.umd.min.js"></script>'
        '<script src="/assets/dashboard.js" defer></script>'
        f'</head><body data-refresh="{int(refresh)}">\n' + "\n".join(body) + "\n"
        f'<script type="application/json" id="bench-data">'
        f"{_json_block([s.model_dump(mode='json') for s in series])}</script>\n"
        "</body></html>\n"
    )


def _header(status: FleetStatus, title: str) -> str:
    pending = f"{len(status.pending)} pending" if status.pending else "in sync"
    return (
        f"<header><h1>{title}</h1><p>"
        f'desired <code id="desired-commit">{_e((status.desired_commit or "-")[:12])}</code> '
        f'live <code id="live-commit">{_e((status.live_commit or "-")[:12])}</code> '
        f"last apply {_e(status.last_apply or '-')} &middot; {_e(pending)} &middot; "
        f"observed {_e(status.observed_at)}</p></header>"
    )


def _host(host: HostStatus) -> str:
    if not host.reachable:
        return (
            f'<article class="host unreachable" data-host="{_e(host.name)}">'
            f"<h2>{_e(host.name)}</h2><p>unreachable: {_e(host.error)}</p></article>"
        )
    gpus = "".join(_gpu(g) for g in host.gpus)
    rows = "".join(_seat_row(s) for s in host.seats)
    head = "".join(f"<th>{c}</th>" for c in SEAT_COLUMNS)
    table = f'<table class="seats"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'
    return (
        f'<article class="host" data-host="{_e(host.name)}"><h2>{_e(host.name)}</h2>{gpus}'
        f"{table if rows else '<p>no seat</p>'}</article>"
    )


def _gpu(gpu: GpuStatus) -> str:
    total, used = gpu.memory_total_mib, gpu.memory_used_mib
    return (
        f'<div class="gpu" data-gpu="{gpu.index}"><span class="gpu-name">GPU {gpu.index} '
        f"{_e(gpu.name)}</span>"
        f'<meter class="gpu-memory" min="0" max="{total}" value="{used}" '
        f'high="{int(total * 0.9)}" optimum="0"></meter>'
        f'<span class="gpu-used">{used / 1024:.1f} / {total / 1024:.1f} GiB</span>'
        f'<span class="gpu-seats">{_e(", ".join(gpu.seats))}</span></div>'
    )


def _seat_row(seat: SeatStatus) -> str:
    def count(value: float | None) -> str:
        return "-" if value is None else f"{value:g}"

    band = f"{seat.band[0]:g}..{seat.band[1]:g}" if seat.band else "-"
    concurrency = f"{seat.concurrency:.2f}x" if seat.concurrency is not None else "-"
    bench = "-"
    if seat.bench is not None and seat.bench.decode_tok_s is not None:
        ratio = f" ({seat.bench.ratio:.2f}x)" if seat.bench.ratio is not None else ""
        bench = f"{seat.bench.decode_tok_s:.1f} tok/s{ratio} {seat.bench.level}"
    cells = (
        seat.seat,
        seat.state,
        ",".join(str(g) for g in seat.gpus) or "-",
        seat.port if seat.port is not None else "-",
        count(seat.running),
        count(seat.waiting),
        f"{seat.kv_usage:.0%}" if seat.kv_usage is not None else "-",
        concurrency,
        band,
        bench,
        ", ".join(seat.aliases) or "-",
    )
    level = seat.bench.level if seat.bench else "none"
    classes = f"seat state-{_e(seat.state)} bench-{_e(level)}" + (
        "" if seat.in_band in (True, None) else " out-of-band"
    )
    tds = "".join(f"<td>{_e(c)}</td>" for c in cells)
    return f'<tr class="{classes}" data-seat="{_e(seat.seat)}">{tds}</tr>'


def _aliases(status: FleetStatus) -> str:
    rows = "".join(
        f'<tr class="alias" data-alias="{_e(a.alias)}"><td>{_e(a.alias)}</td>'
        f"<td>{_e(a.seat or a.api_base or '-')}</td>"
        f"<td>{ {True: 'answers', False: 'dead', None: 'not probed'}[a.answers] }</td></tr>"
        for a in status.aliases
    )
    clients = "".join(
        f"<li>{_e(c.name)}: {_e(', '.join(c.aliases))} (key at {_e(c.where)}: "
        f"{_e(c.delivered)})</li>"
        for c in status.clients
    )
    return (
        '<section id="aliases"><h2>Aliases</h2><table><thead><tr><th>alias</th><th>seat</th>'
        f"<th>backend</th></tr></thead><tbody>{rows}</tbody></table>"
        f'<h3>Clients</h3><ul id="clients">{clients or "<li>none declared</li>"}</ul></section>'
    )


def _bench(series: tuple[BenchSeries, ...]) -> str:
    figures = "".join(
        f'<figure class="bench" data-seat="{_e(s.seat)}">'
        f'<canvas class="bench-chart" data-seat="{_e(s.seat)}" width="520" height="220" '
        f'role="img" aria-label="decode tok/s of {_e(s.seat)}"></canvas>'
        f"<figcaption>{_e(s.seat)}: {len(s.decode)} measurement(s), baseline "
        f"{_e(f'{s.baseline:.1f} tok/s' if s.baseline else 'none')}</figcaption></figure>"
        for s in series
    )
    return f'<section id="bench"><h2>Bench</h2>{figures or "<p>no measurement yet</p>"}</section>'


def _findings(status: FleetStatus) -> str:
    items = "".join(
        f'<li class="finding {_e(f.severity.value)}" data-kind="{_e(f.kind.value)}">'
        f"<b>{_e(f.severity.value)}</b> {_e(f.kind.value)} <i>{_e(f.target)}</i>: "
        f"{_e(f.message)}</li>"
        for f in status.findings
    )
    return f'<section id="findings"><h2>Findings</h2><ul>{items or "<li>none</li>"}</ul></section>'


def _history(history: History) -> str:
    def table(runs: tuple[Run, ...], kind: str) -> str:
        rows = "".join(
            f'<tr class="run {kind}"><td>{_e(r.at)}</td><td>{_e(r.summary)}</td>'
            f"<td><code>{_e((r.desired_commit or '-')[:12])}</code></td>"
            f"<td><code>{_e((r.live_commit or '-')[:12])}</code></td><td>{_e(r.result)}</td></tr>"
            for r in runs
        )
        head = "<th>at</th><th>summary</th><th>desired</th><th>live</th><th>result</th>"
        return f'<table id="{kind}s"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'

    return (
        '<section id="history"><h2>Plans</h2>'
        + table(history.plans, "plan")
        + "<h2>Applies</h2>"
        + table(history.applies, "apply")
        + "</section>"
    )
