"""How `fleet bench` turns one streamed reply into decode tok/s and time to first token.

A busy controller or link can hand bench a reply's events in bursts, all stamped at
nearly one time: (tokens - 1) / (last - first) then reads tens of thousands of tok/s, and
a baseline taken so judges every later run a regression. Where the engine states its own
decode speed in the stream (llama-server's last chunk carries `timings`, as the real
b11434 and the lab's stand-in send it), that figure is taken; otherwise the arrival times.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from fleet.engines import engine_for
from reconciler.adapters.stream import Stream
from reconciler.workflows.bench import measured_decode

SENT = 100.0


def chunk(text: str) -> str:
    return json.dumps({"choices": [{"index": 0, "delta": {"content": text}}]})


def final(**extra: Any) -> str:
    choice = {"index": 0, "delta": {}, "finish_reason": "length"}
    usage = {"completion_tokens": 64, "prompt_tokens": 20, "total_tokens": 84}
    return json.dumps({"choices": [choice], "usage": usage, **extra})


def timings(predicted_n: Any, predicted_ms: Any) -> dict[str, Any]:
    return {
        "prompt_n": 20,
        "prompt_ms": 4.0,
        "predicted_n": predicted_n,
        "predicted_ms": predicted_ms,
    }


def stream(stamps: list[float], last: str) -> Stream:
    events = [(stamp, chunk(f"t{i}")) for i, stamp in enumerate(stamps)]
    return Stream(status=200, sent_at=SENT, events=[*events, (stamps[-1], last)])


PACED = [SENT + 0.05 + i * 0.01 for i in range(64)]  # 100 tok/s as the events arrive
BURST = [SENT + 0.05 + i * 1e-6 for i in range(64)]  # the same 64 tokens in one read


@pytest.mark.parametrize(
    ("engine", "stamps", "last", "rate"),
    [
        ("llama.cpp", BURST, final(timings=timings(64, 640.0)), 100.0),
        ("llama.cpp", PACED, final(timings=timings(64, 320.0)), 200.0),
        ("llama.cpp", PACED, final(), 100.0),
        ("vllm", PACED, final(timings=timings(64, 320.0)), 100.0),
        ("llama.cpp", PACED, final(timings=timings(64, 0)), 100.0),
        ("llama.cpp", PACED, final(timings=timings(True, 320.0)), 100.0),
        ("llama.cpp", PACED, final(timings=timings(64, "320")), 100.0),
        ("llama.cpp", PACED, final(timings="fast"), 100.0),
    ],
    ids=[
        "llama-server-burst-takes-its-timings",
        "llama-server-timings-win-over-arrival",
        "no-timings-through-a-proxy-times-arrival",
        "vllm-states-none-its-timings-key-ignored",
        "zero-milliseconds-ignored",
        "boolean-count-ignored",
        "text-milliseconds-ignored",
        "timings-not-a-map-ignored",
    ],
)
def test_decode_is_the_engines_own_figure_else_the_arrival_times(
    engine: str, stamps: list[float], last: str, rate: float
) -> None:
    decode, ttft = measured_decode(stream(stamps, last), engine_for(engine))
    assert decode == pytest.approx(rate, rel=0.02)
    assert ttft == pytest.approx(0.05)


def test_a_reply_without_content_measures_nothing() -> None:
    empty = Stream(status=200, sent_at=SENT, events=[(SENT + 1, final(timings=timings(64, 1)))])
    assert measured_decode(empty, engine_for("llama.cpp")) == (None, None)
