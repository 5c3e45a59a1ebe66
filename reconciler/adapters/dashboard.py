"""The dashboard page's server side: the newest status it shows, and what each path answers.

`Dashboard` holds what the page shows (the newest `FleetStatus`, the seats' bench history,
the recent plans and applies), replaced whole by whoever observes: the reconcile loop
after each cycle, `fleet serve` after each refresh. `answer(path)` is what
`reconciler.adapters.metrics.serve` sends for `/` (the page), `/status.json` (the same
data) and `/assets/<name>` (the vendored Chart.js, the page's script and style, from
`assets/`); None for any other path. Every body is read-only, and passes through
`fleet.secrets.redact` with the values of the variables desired/ references, so no secret
reaches the page even if a host echoed one; the page may load nothing but its own assets
(Content-Security-Policy).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path

from fleet.observed.bench import BenchRecord, BenchResult
from fleet.report.dashboard import ASSETS, History, Run, bench_series, page_data, render_page
from fleet.report.status import FleetStatus
from fleet.secrets import redact

ASSET_DIR = Path(__file__).parent / "assets"
TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


@dataclass(frozen=True)
class Reply:
    """One answer: status, content type, body."""

    status: int
    content_type: str
    body: bytes


@dataclass
class Dashboard:
    """What the page shows, replaced whole under a lock by the one thread that observes."""

    refresh: int = 30
    status: FleetStatus | None = None
    history: History = field(default_factory=History)
    bench: BenchRecord = field(default_factory=BenchRecord)
    measured: dict[str, BenchResult] = field(default_factory=dict)
    secrets: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def update(
        self,
        status: FleetStatus,
        bench: BenchRecord,
        measured: dict[str, BenchResult] | None = None,
        secrets: list[str] | None = None,
    ) -> None:
        """Show this status, with its bench record (and a loop's own newer results); the
        newest apply each host journaled joins the list of applies."""
        with self._lock:
            self.status, self.bench, self.measured = status, bench, dict(measured or {})
            if secrets is not None:
                self.secrets = secrets
            for host in sorted(status.hosts, key=lambda h: h.applied_at or ""):
                if host.applied_at and host.applied_commit:
                    self.history = self.history.add(
                        Run(
                            at=host.applied_at,
                            kind="apply",
                            summary=f"applied on {host.name}",
                            desired_commit=host.applied_commit,
                            live_commit=host.applied_commit,
                            result="journaled",
                        )
                    )

    def record(self, run: Run) -> None:
        """Add a plan or an apply to the page's history."""
        with self._lock:
            self.history = self.history.add(run)

    def answer(self, path: str) -> Reply | None:
        """What `path` gets; None: not the dashboard's."""
        path = path.split("?", 1)[0]
        if path.startswith("/assets/"):
            name = path.removeprefix("/assets/")
            if name not in ASSETS:
                return None
            kind = TYPES[Path(name).suffix]
            return Reply(200, kind, (ASSET_DIR / name).read_bytes())
        if path not in ("/", "/index.html", "/status.json"):
            return None
        with self._lock:
            status, history, secrets = self.status, self.history, list(self.secrets)
            series = bench_series(self.bench, self.measured)
        if status is None:
            return Reply(503, "text/plain; charset=utf-8", b"no observation yet\n")
        if path == "/status.json":
            text = json.dumps(page_data(status, series, history), indent=2, sort_keys=True)
            return Reply(200, "application/json", redact(text, secrets).encode())
        page = render_page(status, series, history, self.refresh)
        return Reply(200, "text/html; charset=utf-8", redact(page, secrets).encode())
