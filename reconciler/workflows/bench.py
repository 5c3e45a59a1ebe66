"""`fleet bench`: measure how each seat serves, one probe at a time, and keep the record.

Per seat, serially (probes on one GPU never confound each other): one warm-up request,
then `runs` streamed requests at concurrency 1 with a fixed prompt; decode tok/s per
request = what the engine states of it in its stream where it does (llama.cpp's
`timings`), else (tokens - 1) / (last token - first token) as the events arrive; and the
time to the first token.
Speculative decoding: the engine's /metrics counter deltas over those runs. With `depth`,
one request whose prompt fills ~0.97 of the context (distinct words, sized with the
engine's /tokenize where it has one), `max_tokens` 1: prefill tok/s, then the engine log
written meanwhile is scanned for out-of-memory signatures up to where the engine was told
to stop (a stopped seat did not run short of memory) and /health is asked. A seat
that died is reported, never restarted. `via="gateway"` measures through the proxy by
alias, as clients see it. The record and its verdicts are `fleet.observed.bench`.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from fleet.engines import Engine, engine_for
from fleet.errors import FleetError
from fleet.facts.engine_metrics import sum_samples
from fleet.names import HASH_LABEL
from fleet.observed.bench import (
    BenchRecord,
    BenchResult,
    Prefill,
    baseline_of,
    decode_rate,
    depth_prompt,
    judge,
    oom_line,
    speculative,
    stop_line,
    stop_signatures,
    summarize,
)
from fleet.observed.models import Observation
from fleet.spec.models import DesiredFleet, Host, Seat
from reconciler.adapters.http import request_via
from reconciler.adapters.stream import Stream, stream_url, stream_via
from reconciler.host import HostSession, Sessions
from reconciler.runtimes import adapter_for
from reconciler.workflows.gateway import master_key
from reconciler.workflows.seats import seat_address

PROMPT = "Write a short story about a lighthouse keeper who finds a message in a bottle."
DEPTH_SHARE = 0.97


@dataclass(frozen=True)
class BenchOptions:
    """How to measure."""

    runs: int = 3
    max_tokens: int = 256
    depth: bool = False
    via: Literal["seat", "gateway"] = "seat"
    set_baseline: bool = False


@dataclass(frozen=True)
class Target:
    """Where the requests go: the seat over its host's SSH channel, or the gateway URL."""

    seat: Seat
    model: str
    url: str | None = None
    key: str | None = None

    def stream(self, sessions: Sessions, desired: DesiredFleet, body: dict[str, object]) -> Stream:
        body = {
            **body,
            "model": self.model,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if self.url is not None:
            headers = {"Authorization": f"Bearer {self.key}"} if self.key else {}
            return stream_url(f"{self.url}/v1/chat/completions", body, headers)
        host = desired.hosts[self.seat.host]
        conn = sessions.get(self.seat.host)
        return stream_via(conn, seat_address(host), self.seat.port, "/v1/chat/completions", body)


def bench_seats(
    desired: DesiredFleet,
    sessions: Sessions,
    observation: Observation,
    names: list[str],
    options: BenchOptions,
    record: BenchRecord,
) -> list[BenchResult]:
    """Measure each named seat in turn; each result judged against its baseline."""
    results = []
    for name in names:
        result = bench_seat(desired, sessions, observation, desired.seats[name], options)
        if options.set_baseline:
            result = result.model_copy(update={"baseline": True})
        results.append(judge(result, baseline_of(record, name, result.spec_hash)))
    return results


def bench_seat(
    desired: DesiredFleet,
    sessions: Sessions,
    observation: Observation,
    seat: Seat,
    options: BenchOptions,
) -> BenchResult:
    """One seat's measurements."""
    found = observation.seat(seat.name)
    if found is None or not found[1].instance.running:
        raise FleetError(f"seat {seat.name} is not running on {seat.host}: nothing to measure")
    container = found[1].instance
    target = _target(desired, seat, options)
    before = _counters(sessions, desired, seat)
    _request(target, sessions, desired, PROMPT, options.max_tokens)  # warm-up
    rates, ttfts = [], []
    for _ in range(options.runs):
        stream = _request(target, sessions, desired, PROMPT, options.max_tokens)
        rate, ttft = measured_decode(stream, engine_for(seat.engine))
        rates += [rate] if rate is not None else []
        ttfts += [ttft] if ttft is not None else []
    after = _counters(sessions, desired, seat)
    spec = None
    if seat.speculative is not None:
        delta = {k: after.get(k, 0.0) - before.get(k, 0.0) for k in after}
        spec = speculative(
            delta.get("accepted", 0.0), delta.get("draft_tokens", 0.0), delta.get("drafts", 0.0)
        )
    return BenchResult(
        seat=seat.name,
        host=seat.host,
        spec_hash=container.labels.get(HASH_LABEL),
        image_id=container.image_id,
        model=seat.model,
        date=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        via=options.via,
        decode_tok_s=summarize(rates),
        ttft_s=round(statistics.median(ttfts), 4) if ttfts else None,
        prefill=_depth(target, sessions, desired, seat, container.name) if options.depth else None,
        speculative=spec,
    )


def _target(desired: DesiredFleet, seat: Seat, options: BenchOptions) -> Target:
    if options.via == "seat":
        return Target(seat=seat, model=seat.served_name)
    gateway = desired.gateway
    if gateway is None or not seat.aliases:
        raise FleetError(f"seat {seat.name} has no gateway alias to measure through")
    return Target(
        seat=seat, model=seat.aliases[0], url=gateway.url.rstrip("/"), key=master_key(gateway)
    )


def _request(
    target: Target, sessions: Sessions, desired: DesiredFleet, prompt: str, max_tokens: int
) -> Stream:
    body = {
        "messages": [{"role": "user", "content": prompt}],
        "max_tokens": max_tokens,
        "temperature": 0,
    }
    stream = target.stream(sessions, desired, body)
    if stream.status != 200:
        raise FleetError(
            f"seat {target.seat.name} answered HTTP {stream.status}: {stream.body[:200]}"
        )
    return stream


def measured_decode(stream: Stream, engine: Engine) -> tuple[float | None, float | None]:
    """(decode tok/s, time to first token) of one streamed request: the engine's own
    figure where its stream states one, else timed by the events' arrival (events a busy
    link delivered in one burst make that figure too high)."""
    content = [stamp for stamp, data in stream.events if _has_content(data)]
    tokens = _usage_tokens(stream) or len(content)
    if not content:
        return None, None
    stated = _stated_rate(stream, engine)
    rate = stated if stated is not None else decode_rate(content[0], content[-1], tokens)
    return rate, content[0] - stream.sent_at


def _stated_rate(stream: Stream, engine: Engine) -> float | None:
    for _, data in reversed(stream.events):
        try:
            event = json.loads(data)
        except (ValueError, RecursionError):
            continue
        rate = engine.stream_decode_rate(event) if isinstance(event, dict) else None
        if rate is not None:
            return round(rate, 2)
    return None


def _has_content(data: str) -> bool:
    try:
        event = json.loads(data)
    except (ValueError, RecursionError):
        return False
    choices = event.get("choices") if isinstance(event, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    delta = first.get("delta") if isinstance(first, dict) else None
    if not isinstance(delta, dict):
        return False
    return bool(delta.get("content") or delta.get("reasoning_content"))


def _usage_tokens(stream: Stream) -> int | None:
    for _, data in reversed(stream.events):
        try:
            usage = json.loads(data).get("usage")
        except (ValueError, AttributeError, RecursionError):
            continue
        if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
            return int(usage["completion_tokens"])
    return None


def _counters(sessions: Sessions, desired: DesiredFleet, seat: Seat) -> dict[str, float]:
    """The engine's speculative-decoding counters from the seat's /metrics (summed over labels)."""
    host = desired.hosts[seat.host]
    try:
        reply = request_via(
            sessions.get(seat.host), seat_address(host), seat.port, "GET", "/metrics"
        )
    except FleetError:
        return {}
    return engine_for(seat.engine).speculative_counts(sum_samples(reply.body), seat)


def _depth(
    target: Target, sessions: Sessions, desired: DesiredFleet, seat: Seat, container: str
) -> Prefill:
    """Fill ~0.97 of the context in one request; clean, or failed with the log line."""
    conn = sessions.get(seat.host)
    host = desired.hosts[seat.host]
    wanted = int(seat.context * DEPTH_SHARE)
    words, tokens = _sized(conn, host, seat, wanted)
    started = conn.check("date -u +%Y-%m-%dT%H:%M:%SZ").strip()
    failed_status: int | str | None = None
    ttft = None
    try:
        stream = target.stream(
            sessions,
            desired,
            {"messages": [{"role": "user", "content": depth_prompt(words)}], "max_tokens": 1},
        )
        content = [
            stamp
            for stamp, data in stream.events
            if _has_content(data) or '"finish_reason"' in data
        ]
        ttft = content[0] - stream.sent_at if content and stream.status == 200 else None
        failed_status = None if stream.status == 200 else stream.status
    except FleetError as err:
        failed_status = str(err)
    logs = adapter_for(host).read_log(conn, container, started, 400)
    stops = stop_signatures(seat.engine)
    line = oom_line(logs.splitlines(), engine_for(seat.engine).OOM_SIGNATURES, stops)
    stopped = stop_line(logs.splitlines(), stops)
    line = line or (f"stopped: {stopped}" if stopped else None)
    health = _health(conn, host, seat)
    if line or failed_status or health != 200:
        detail = line or (f"HTTP {failed_status}" if failed_status else f"/health answers {health}")
        return Prefill(tokens=tokens, result="failed", log_line=detail)
    return Prefill(tokens=tokens, tok_s=round(tokens / ttft, 1) if ttft else None, result="clean")


def _sized(conn: HostSession, host: Host, seat: Seat, wanted: int) -> tuple[int, int]:
    """Words for a prompt of about `wanted` tokens, and its token count (/tokenize)."""
    words = wanted
    for _ in range(2):
        count = _tokenize(conn, host, seat, depth_prompt(words))
        if count is None:
            return words, words
        if abs(count - wanted) <= max(16, wanted // 200):
            return words, count
        words = max(1, int(words * wanted / max(count, 1)))
    return words, _tokenize(conn, host, seat, depth_prompt(words)) or words


def _tokenize(conn: HostSession, host: Host, seat: Seat, prompt: str) -> int | None:
    path = engine_for(seat.engine).TOKENIZE
    if path is None:
        return None
    try:
        reply = request_via(
            conn,
            seat_address(host),
            seat.port,
            "POST",
            path,
            {"model": seat.served_name, "prompt": prompt},
            timeout=60,
        )
    except FleetError:
        return None
    data = reply.json()
    count = data.get("count") if isinstance(data, dict) else None
    return int(count) if reply.status == 200 and isinstance(count, int) else None


def _health(conn: HostSession, host: Host, seat: Seat) -> int | None:
    try:
        return request_via(conn, seat_address(host), seat.port, "GET", "/health", timeout=10).status
    except FleetError:
        return None
