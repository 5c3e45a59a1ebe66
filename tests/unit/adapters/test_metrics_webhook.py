"""The reconciler's /metrics and /healthz, and webhook events, over real loopback HTTP."""

from __future__ import annotations

import json
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

from fleet.observed.bench import BenchRecord
from fleet.plan.plan import make_plan
from reconciler.adapters.metrics import FleetMetrics, serve
from reconciler.adapters.webhook import Notifier
from tests.unit.plan.fakes import in_sync
from tests.unit.render.test_compose import example


def test_metrics_show_the_cycle_and_healthz_answers() -> None:
    fleet = example()
    observation = in_sync(fleet)
    plan = make_plan(fleet, observation)
    metrics = FleetMetrics()
    bands = {"coder": (1.2, 64.0)}
    metrics.record_cycle(plan, observation, bands, {}, BenchRecord())
    metrics.applies.labels("succeeded").inc()
    server = serve(metrics, "127.0.0.1:0", interval=60)
    try:
        port = server.server_address[1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
            text = reply.read().decode()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as health:
            status = health.status
    finally:
        server.shutdown()
        server.server_close()
    assert 'fleet_seat_up{host="tower",seat="coder"} 1.0' in text
    assert 'fleet_seat_in_sync{seat="coder"} 1.0' in text
    assert 'fleet_seat_concurrency_band_max{seat="coder"} 64.0' in text
    assert 'fleet_apply_total{result="succeeded"} 1.0' in text
    assert 'fleet_apply_total{result="rolled-back"} 0.0' in text  # there before the first
    assert 'fleet_host_up{host="tower"} 1.0' in text
    assert "fleet_info{" in text and status == 200


class Receiver(BaseHTTPRequestHandler):
    got: ClassVar[list[dict[str, object]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Receiver.got.append(json.loads(body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        return


def test_webhook_events_arrive_and_a_dead_receiver_never_blocks() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        notifier = Notifier(f"http://127.0.0.1:{server.server_address[1]}/hook")
        notifier.send({"event": "heal", "seat": "coder"})
        notifier.drain()
    finally:
        server.shutdown()
        server.server_close()
    assert Receiver.got == [{"event": "heal", "seat": "coder"}]
    dead = Notifier("http://127.0.0.1:9/nobody")
    for _ in range(5):
        dead.send({"event": "drift"})
    # queued, not waited for: a send that posted would have failed its event by now (each
    # event's retries pause 2 s then 4 s), and none has failed or been sent
    assert (dead.failed, dead.sent) == (0, [])
