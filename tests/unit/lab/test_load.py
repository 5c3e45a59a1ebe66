"""The lab's client load against a tiny local HTTP server: counts, failures, percentiles, bounds."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from tests.lab.load import ClientLoad, StreamLoad, percentile
from tests.waiting import wait_until


class _Handler(BaseHTTPRequestHandler):
    """200 for every alias but `broken` (500 with a LiteLLM-like body); records keys."""

    seen: ClassVar[list[tuple[str, str]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append((body["model"], self.headers.get("Authorization", "")))
        if body.get("stream"):
            self._stream(body["model"])
            return
        if body["model"] == "slow":
            time.sleep(0.05)
        status = 500 if body["model"] == "broken" else 200
        reply = b'{"error": "model group broken failed"}' if status == 500 else b'{"ok": true}'
        self.send_response(status)
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def _stream(self, alias: str) -> None:
        """Three chunks, then `[DONE]` (`whole`), nothing more (`cut`) or an error event."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for _ in range(3):
            chunk = {"model": f"{alias}-model", "choices": [{"delta": {"content": "w"}}]}
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        tail = {"whole": "data: [DONE]\n\n", "cut": "", "error": 'data: {"error": "gone"}\n\n'}
        self.wfile.write(tail[alias].encode())
        self.close_connection = True

    def log_message(self, *args: object) -> None:
        pass


def counts(load: ClientLoad, *aliases: str) -> int:
    """The fewest requests any of the aliases has seen answered (or failed) so far."""
    report = load.report().aliases
    return min(report[a].total if a in report else 0 for a in aliases)


@pytest.fixture()
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    _Handler.seen = []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_counts_every_request_and_only_failures_as_failed(server: str) -> None:
    with ClientLoad(server, "sk-test", ["ok", "broken"], rate_per_client=20.0) as load:
        wait_until(lambda: counts(load, "ok", "broken") >= 5, 30, "5 requests of each alias")
    report = load.report()
    assert report.aliases["ok"].failed == 0
    assert report.aliases["ok"].total >= 5
    broken = report.aliases["broken"]
    assert broken.failed == broken.total >= 5
    assert broken.failures[0].status == 500
    assert "model group broken failed" in broken.failures[0].body
    assert 0.0 <= broken.failures[0].at < 10.0  # seconds after the start: the first request
    assert report.total == report.aliases["ok"].total + broken.total
    assert {key for _, key in _Handler.seen} == {"Bearer sk-test"}
    assert "broken: " in report.summary() and "failed" in report.summary()


def test_nothing_listening_is_a_failure_with_status_0() -> None:
    with ClientLoad("http://127.0.0.1:9", None, ["chat"], timeout=1.0) as load:
        wait_until(lambda: counts(load, "chat") >= 1, 30, "a request")
    chat = load.report().aliases["chat"]
    assert chat.total >= 1 and chat.failed == chat.total
    assert chat.failures[0].status == 0
    assert "Error" in chat.failures[0].body


def test_stops_by_itself_after_max_seconds(server: str) -> None:
    load = ClientLoad(
        server, None, ["ok"], clients_per_alias=1, rate_per_client=50.0, max_seconds=0.3
    )
    load.start()
    wait_until(lambda: load.elapsed >= 0.3 and load.report().total >= 1, 30, "the bound")
    wait_until(lambda: not load.running, 30, "the clients to stop by themselves")
    total = load.report().total
    load.stop()
    assert load.report().total == total  # nothing sent after the bound
    assert 1 <= total <= 0.3 * 50 + 2


def test_rate_bounds_the_count(server: str) -> None:
    with ClientLoad(server, None, ["ok"], clients_per_alias=2, rate_per_client=5.0) as load:
        time.sleep(1.0)  # the load runs a while: a busy machine sends fewer, never more
        elapsed = load.elapsed
    assert load.report().total <= 2 * (5 * elapsed + 2)


def test_latency_percentiles_reflect_slow_answers(server: str) -> None:
    with ClientLoad(server, None, ["slow", "ok"], rate_per_client=10.0) as load:
        wait_until(lambda: counts(load, "slow", "ok") >= 5, 30, "5 answers of each alias")
    report = load.report()
    assert report.aliases["slow"].p50 >= 0.05
    assert report.aliases["slow"].p95 >= report.aliases["slow"].p50
    assert report.aliases["ok"].p50 < report.aliases["slow"].p50


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://10.0.0.1:4000", "loopback"),
        ("https://127.0.0.1:4000", "http://"),
    ],
    ids=["not-loopback", "not-http"],
)
def test_refuses_what_is_not_plain_loopback_http(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ClientLoad(url, None, ["chat"])


@pytest.mark.parametrize(
    ("values", "fraction", "expected"),
    [
        ([], 0.5, 0.0),
        ([3.0], 0.95, 3.0),
        ([1.0, 2.0, 3.0, 4.0], 0.5, 2.0),
        ([*range(1, 101)], 0.95, 95),
    ],
    ids=["none", "one", "median-of-four", "p95-of-hundred"],
)
def test_percentile_is_nearest_rank(values: list[float], fraction: float, expected: float) -> None:
    assert percentile(values, fraction) == expected


@pytest.mark.parametrize(
    ("alias", "failed", "said"),
    [("whole", False, "3 chunks"), ("cut", True, "no [DONE]"), ("error", True, "stream error")],
    ids=["ended-with-done", "cut-half-way", "error-event"],
)
def test_a_stream_counts_only_when_it_ends_with_done(
    server: str, alias: str, failed: bool, said: str
) -> None:
    with StreamLoad(server, None, [alias], rate_per_client=20.0) as load:
        wait_until(lambda: counts(load, alias) >= 2, 30, "2 streams")
    report = load.report().aliases[alias]
    assert (report.failed == report.total) is failed and (report.failed == 0) is not failed
    assert not failed or said in report.failures[0].body
    assert load.models[alias] == {f"{alias}-model"}
    assert load.in_flight[alias] == 0
