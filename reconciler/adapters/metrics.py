"""The reconcile loop's Prometheus metrics (prometheus_client) and its HTTP endpoint.

`FleetMetrics` holds one registry; the loop sets it after each cycle from the plan, the
observation, the engines' load and the bench results (the committed record's newest, each
replaced by the loop's own measurement once it has one), and again after it measured.
`serve` answers `/metrics` and `/healthz` (200 while the loop has beaten its heart within
three intervals) on the `--listen` address, in a daemon thread; given a
`reconciler.adapters.dashboard.Dashboard`, also the dashboard page (`/`, `/status.json`,
`/assets/...`). GET only: nothing served changes anything.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from fleet.errors import FleetError
from fleet.facts.engine_metrics import EngineLoad
from fleet.observed.bench import BenchRecord, BenchResult, baseline_of, latest
from fleet.observed.findings import Finding
from fleet.observed.models import Observation
from fleet.plan.plan import Plan
from reconciler.adapters.dashboard import HEADERS, Dashboard

APPLY_RESULTS = ("succeeded", "rolled-back")


class FleetMetrics:
    """Every metric the loop exports."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.info = Gauge(
            "fleet_info", "desired/ and live commits", ["desired_commit", "live_commit"], registry=r
        )
        self.seat_up = Gauge(
            "fleet_seat_up", "1 when the seat's container runs", ["seat", "host"], registry=r
        )
        self.host_up = Gauge(
            "fleet_host_up", "1 when the host answered the last observation", ["host"], registry=r
        )
        self.in_sync = Gauge(
            "fleet_seat_in_sync", "1 when plan has nothing to do for the seat", ["seat"], registry=r
        )
        self.kv_tokens = Gauge(
            "fleet_seat_kv_tokens", "KV-cache tokens its log reports", ["seat"], registry=r
        )
        self.concurrency = Gauge(
            "fleet_seat_concurrency_ratio", "KV tokens / context", ["seat"], registry=r
        )
        self.band_min = Gauge(
            "fleet_seat_concurrency_band_min", "the seat's band, low end", ["seat"], registry=r
        )
        self.band_max = Gauge(
            "fleet_seat_concurrency_band_max", "the seat's band, high end", ["seat"], registry=r
        )
        self.running = Gauge(
            "fleet_seat_requests_running", "requests the engine runs", ["seat"], registry=r
        )
        self.waiting = Gauge(
            "fleet_seat_requests_waiting", "requests the engine queues", ["seat"], registry=r
        )
        self.alias_up = Gauge(
            "fleet_alias_up", "1 when the alias's backend answers", ["alias"], registry=r
        )
        self.drift = Gauge("fleet_drift", "pending changes by kind", ["kind"], registry=r)
        self.findings = Gauge("fleet_findings", "findings by severity", ["severity"], registry=r)
        self.duration = Gauge(
            "fleet_reconcile_duration_seconds", "the last cycle's duration", registry=r
        )
        self.last_success = Gauge(
            "fleet_reconcile_last_success_timestamp_seconds",
            "when a cycle last succeeded",
            registry=r,
        )
        self.backoff = Gauge(
            "fleet_reconcile_backoff_seconds",
            "how long the loop waits before its next cycle (longer after failures)",
            registry=r,
        )
        self.failures = Gauge(
            "fleet_reconcile_consecutive_failures", "cycles failed in a row", registry=r
        )
        self.applies = Counter("fleet_apply", "applies by result", ["result"], registry=r)
        for result in APPLY_RESULTS:  # present from the start: increase() sees the first one
            self.applies.labels(result)
        self.heals = Counter("fleet_heal", "seats healed by reason", ["seat", "reason"], registry=r)
        bench = ["seat", "host", "via"]
        self.bench_decode = Gauge(
            "fleet_bench_decode_tokens_per_second",
            "the newest measured decode median",
            bench,
            registry=r,
        )
        self.bench_ttft = Gauge(
            "fleet_bench_ttft_seconds", "the newest measured time to first token", bench, registry=r
        )
        self.bench_ratio = Gauge(
            "fleet_bench_baseline_ratio",
            "the newest measurement / its committed baseline",
            bench,
            registry=r,
        )
        self.bench_baseline = Gauge(
            "fleet_bench_baseline_decode_tokens_per_second",
            "the decode median of the committed baseline the newest measurement is judged by",
            bench,
            registry=r,
        )
        self._plan_findings: Sequence[Finding] = ()
        self.heartbeat = time.time()

    def record_cycle(
        self,
        plan: Plan,
        observation: Observation,
        bands: dict[str, tuple[float, float]],
        loads: dict[str, EngineLoad],
        bench: BenchRecord,
        measured: Mapping[str, BenchResult] | None = None,
        findings: Sequence[Finding] = (),
    ) -> None:
        """Set every gauge from one cycle's facts (`measured`, `findings`: the loop's bench)."""
        for gauge in (
            self.info,
            self.seat_up,
            self.host_up,
            self.in_sync,
            self.kv_tokens,
            self.concurrency,
            self.band_min,
            self.band_max,
            self.running,
            self.waiting,
            self.alias_up,
            self.drift,
        ):
            gauge.clear()
        self.info.labels(plan.desired_commit or "", observation.live_commit or "").set(1)
        changing = {a.target for a in plan.actions}
        for host in observation.hosts.values():
            self.host_up.labels(host.name).set(1 if host.reachable else 0)
            for seat in (s for s in host.seats if s.managed or s.name in bands):
                self.seat_up.labels(seat.name, host.name).set(1 if seat.instance.running else 0)
                self.in_sync.labels(seat.name).set(0 if seat.name in changing else 1)
                tokens = seat.engine.kv_cache_tokens if seat.engine else None
                if tokens:
                    self.kv_tokens.labels(seat.name).set(tokens)
                if seat.concurrency is not None:
                    self.concurrency.labels(seat.name).set(seat.concurrency)
        for name, (low, high) in bands.items():
            self.band_min.labels(name).set(low)
            self.band_max.labels(name).set(high)
            if not observation.seat(name):
                self.seat_up.labels(name, "").set(0)
                self.in_sync.labels(name).set(0)
        for name, load in loads.items():
            self.running.labels(name).set(load.running or 0)
            self.waiting.labels(name).set(load.waiting or 0)
        self._gateway(observation)
        for action in plan.actions:
            self.drift.labels(action.kind.value).inc()
        self.drift.labels("inventory").set(len(plan.drift))
        self._plan_findings = plan.findings
        self.record_bench(bench, measured or {}, findings)

    def record_bench(
        self,
        bench: BenchRecord,
        measured: Mapping[str, BenchResult],
        findings: Sequence[Finding] = (),
    ) -> None:
        """Set the bench gauges, and the findings (the cycle's plus the loop's bench)."""
        for gauge in (
            self.findings,
            self.bench_decode,
            self.bench_ttft,
            self.bench_ratio,
            self.bench_baseline,
        ):
            gauge.clear()
        for finding in (*self._plan_findings, *findings):
            self.findings.labels(finding.severity.value).inc()
        for name, result in {**latest(bench), **measured}.items():
            labels = (name, result.host, result.via)
            if result.decode_tok_s:
                self.bench_decode.labels(*labels).set(result.decode_tok_s.median)
            if result.ttft_s is not None:
                self.bench_ttft.labels(*labels).set(result.ttft_s)
            if result.baseline_ratio is not None:
                self.bench_ratio.labels(*labels).set(result.baseline_ratio)
            baseline = baseline_of(bench, name, result.spec_hash)
            if baseline is not None and baseline.decode_tok_s:
                self.bench_baseline.labels(*labels).set(baseline.decode_tok_s.median)

    def _gateway(self, observation: Observation) -> None:
        gateway = observation.gateway
        if gateway is None or gateway.config is None:
            return
        for entry in gateway.config.entries:
            probe = gateway.probes.get(entry.address or "")
            if probe is not None:
                self.alias_up.labels(entry.alias).set(1 if probe.answers else 0)

    def text(self) -> bytes:
        """The exposition text."""
        return generate_latest(self.registry)


def serve(
    metrics: FleetMetrics, listen: str, interval: float, dashboard: Dashboard | None = None
) -> ThreadingHTTPServer:
    """Answer /metrics and /healthz on `listen` (host:port) in a daemon thread, and the
    dashboard's paths when given one."""
    host, _, port = listen.rpartition(":")
    if not host or not port.isdigit():
        raise FleetError(f"--listen takes HOST:PORT, not {listen!r}")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.startswith("/metrics"):
                self._send(200, metrics.text(), CONTENT_TYPE_LATEST)
            elif self.path.startswith("/healthz"):
                alive = time.time() - metrics.heartbeat < 3 * max(interval, 10)
                self._send(200 if alive else 503, b"ok\n" if alive else b"stale\n", "text/plain")
            elif dashboard is not None and (reply := dashboard.answer(self.path)) is not None:
                self._send(reply.status, reply.body, reply.content_type, HEADERS)
            else:
                self._send(404, b"not found\n", "text/plain")

        def _send(
            self, code: int, body: bytes, ctype: str, headers: Mapping[str, str] | None = None
        ) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    try:
        server = ThreadingHTTPServer((host.strip("[]"), int(port)), Handler)
    except OSError as err:
        raise FleetError(f"cannot listen on {listen}: {err}") from err
    threading.Thread(target=server.serve_forever, daemon=True, name="metrics").start()
    return server
