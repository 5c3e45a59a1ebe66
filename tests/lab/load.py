"""A bounded client load for lab tests and benchmarks: chat requests per alias, recorded.

    with ClientLoad(url, key, ["chat", "coder"], clients_per_alias=2) as load:
        ... apply something ...
    print(load.report().summary())
    assert load.report().failed == 0

Each client is a thread that sends short chat completions (`max_tokens` small, one
connection per request, as a client that reconnects would) to one alias at
`rate_per_client` requests per second, and records every request: its latency, and for a
failure the status (0 when nothing answered), the first bytes of the body or the error,
and when it happened (seconds since the load started). A request fails when the gateway
fails it, or when nothing answers within `timeout`: 120 s by default, the lab gateway's
own router timeout, so that the client is not the one to give up first. (At 30 s, a
request queued at the fallback seat during a handoff, on a two-core machine whose cores
four lab workers kept busy, timed out unanswered.) The load is bounded in time
(`max_seconds`, then it stops by itself) and in count (`max_requests` per client), and it
only talks to a loopback address. Used by tests/integration and bench/downtime_bench.py.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import math
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from types import TracebackType


@dataclass(frozen=True)
class Failure:
    """One failed request: when (seconds since the load started), status, what came back."""

    at: float
    status: int
    body: str


@dataclass
class AliasRecord:
    """Everything the clients of one alias saw."""

    requests: int = 0
    latencies: list[float] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)


@dataclass(frozen=True)
class AliasReport:
    """Per alias: failed of total requests, and latency percentiles (seconds)."""

    alias: str
    total: int
    failed: int
    p50: float
    p95: float
    failures: tuple[Failure, ...]

    def line(self) -> str:
        """`chat: 0/186 failed, p50 0.041 s, p95 0.090 s` (plus the first failure)."""
        text = (
            f"{self.alias}: {self.failed}/{self.total} failed, "
            f"p50 {self.p50:.3f} s, p95 {self.p95:.3f} s"
        )
        if self.failures:
            first = self.failures[0]
            text += f" (first at {first.at:.1f} s: {first.status} {first.body[:80]!r})"
        return text


@dataclass(frozen=True)
class LoadReport:
    """The report of a whole load, one entry per alias."""

    aliases: dict[str, AliasReport]

    @property
    def failed(self) -> int:
        """Failed requests over every alias."""
        return sum(a.failed for a in self.aliases.values())

    @property
    def total(self) -> int:
        """Requests over every alias."""
        return sum(a.total for a in self.aliases.values())

    def summary(self) -> str:
        """One line per alias."""
        return "\n".join(self.aliases[a].line() for a in sorted(self.aliases))


def percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile of `values` (0.0 for none)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


class ClientLoad:
    """Clients sending short chat completions to aliases, until stopped or bounded."""

    def __init__(
        self,
        url: str,
        key: str | None,
        aliases: list[str],
        clients_per_alias: int = 2,
        rate_per_client: float = 4.0,
        timeout: float = 120.0,
        max_seconds: float = 300.0,
        max_requests: int = 2000,
        max_tokens: int = 4,
    ) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"ClientLoad needs an http:// URL, not {url!r}")
        host = "127.0.0.1" if parts.hostname == "localhost" else parts.hostname
        if not ipaddress.ip_address(host).is_loopback:
            raise ValueError(f"ClientLoad only loads loopback addresses, not {parts.hostname}")
        if rate_per_client <= 0 or clients_per_alias < 1 or max_seconds <= 0:
            raise ValueError("ClientLoad needs a positive rate, clients and max_seconds")
        self.host, self.port = host, parts.port or 80
        self.path = parts.path.rstrip("/") + "/v1/chat/completions"
        self.key, self.aliases = key, list(aliases)
        self.clients, self.rate, self.timeout = clients_per_alias, rate_per_client, timeout
        self.max_seconds, self.max_requests, self.max_tokens = max_seconds, max_requests, max_tokens
        self.records = {alias: AliasRecord() for alias in self.aliases}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._started = 0.0

    def __enter__(self) -> ClientLoad:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Start every client thread."""
        self._started = time.monotonic()
        for alias in self.aliases:
            for index in range(self.clients):
                thread = threading.Thread(
                    target=self._client, args=(alias, index), daemon=True, name=f"load-{alias}"
                )
                self._threads.append(thread)
                thread.start()

    def stop(self) -> None:
        """Stop the clients and wait for their last request (bounded by the timeout)."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=self.timeout + 5.0)

    @property
    def running(self) -> bool:
        """Whether a client still sends (each stops at max_seconds, max_requests or stop)."""
        return any(thread.is_alive() for thread in self._threads)

    @property
    def elapsed(self) -> float:
        """Seconds since the load started."""
        return time.monotonic() - self._started

    def _client(self, alias: str, index: int) -> None:
        interval = 1.0 / self.rate
        # Spread the clients of an alias over one interval, so they do not fire together.
        next_at = time.monotonic() + interval * index / self.clients
        for _ in range(self.max_requests):
            if self._stop.wait(max(0.0, next_at - time.monotonic())):
                return
            if self.elapsed >= self.max_seconds:
                return
            next_at = max(next_at + interval, time.monotonic())
            self._one(alias)

    def _one(self, alias: str) -> None:
        began = time.monotonic()
        status, body = self._send(alias)
        latency = time.monotonic() - began
        with self._lock:
            record = self.records[alias]
            record.requests += 1
            record.latencies.append(latency)
            if status != 200:
                record.failures.append(Failure(began - self._started, status, body[:200]))

    def _send(self, alias: str) -> tuple[int, str]:
        payload = {
            "model": alias,
            "max_tokens": self.max_tokens,
            "messages": [{"role": "user", "content": "ping"}],
        }
        headers = {"Content-Type": "application/json", "Connection": "close"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        try:
            conn.request("POST", self.path, json.dumps(payload), headers)
            reply = conn.getresponse()
            return reply.status, reply.read().decode(errors="replace")
        except (OSError, http.client.HTTPException) as err:
            return 0, f"{type(err).__name__}: {err}"
        finally:
            conn.close()

    def report(self) -> LoadReport:
        """Per alias failed/total and p50/p95 latency so far."""
        with self._lock:
            return LoadReport(
                {
                    alias: AliasReport(
                        alias=alias,
                        total=record.requests,
                        failed=len(record.failures),
                        p50=percentile(record.latencies, 0.50),
                        p95=percentile(record.latencies, 0.95),
                        failures=tuple(record.failures),
                    )
                    for alias, record in self.records.items()
                }
            )


class StreamLoad(ClientLoad):
    """Clients that each keep one long streamed chat open to an alias, one after another
    (`max_tokens` tokens at the engine's token rate), so a stream is in flight at every
    moment. A stream counts as failed unless it answered 200, sent content and ended with
    `data: [DONE]` and no error event: a stream cut half-way is a failure, as its client
    sees it. `models` collects the model names the chunks said (who answered)."""

    def __init__(self, url: str, key: str | None, aliases: list[str], **options: float) -> None:
        settings = {"clients_per_alias": 1, "rate_per_client": 50.0, "max_tokens": 80, **options}
        super().__init__(url, key, aliases, **settings)  # type: ignore[arg-type]
        self.models: dict[str, set[str]] = {alias: set() for alias in aliases}
        self.in_flight = {alias: 0 for alias in aliases}

    def _send(self, alias: str) -> tuple[int, str]:
        payload = {
            "model": alias,
            "max_tokens": self.max_tokens,
            "stream": True,
            "messages": [{"role": "user", "content": "tell a long story"}],
        }
        headers = {"Content-Type": "application/json", "Connection": "close"}
        if self.key:
            headers["Authorization"] = f"Bearer {self.key}"
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        with self._lock:
            self.in_flight[alias] += 1
        try:
            conn.request("POST", self.path, json.dumps(payload), headers)
            reply = conn.getresponse()
            if reply.status != 200:
                return reply.status, reply.read().decode(errors="replace")
            return self._read_stream(alias, reply)
        except (OSError, http.client.HTTPException) as err:
            return 0, f"stream cut: {type(err).__name__}: {err}"
        finally:
            with self._lock:
                self.in_flight[alias] -= 1
            conn.close()

    def _read_stream(self, alias: str, reply: http.client.HTTPResponse) -> tuple[int, str]:
        chunks, done = 0, False
        for raw in reply:
            line = raw.decode(errors="replace").strip()
            if not line.startswith("data: "):
                continue
            if line == "data: [DONE]":
                done = True
                continue
            event = json.loads(line[6:])
            if "error" in event:
                return 0, f"stream error after {chunks} chunks: {line[:160]}"
            chunks += 1
            if event.get("model"):
                with self._lock:
                    self.models[alias].add(str(event["model"]))
        if not done or chunks < 2:
            return 0, f"stream cut after {chunks} chunks (no [DONE])"
        return 200, f"{chunks} chunks"
