"""Streamed replies are cut into server-sent events as their bytes arrive, chunked or not."""

from __future__ import annotations

import pytest

from reconciler.adapters.stream import _read


def chunked(*parts: bytes) -> list[bytes]:
    return [b"%x\r\n%s\r\n" % (len(p), p) for p in parts] + [b"0\r\n\r\n"]


def halves(pieces: list[bytes]) -> list[bytes]:
    """Every piece read in two halves, as a slow network delivers it."""
    return [half for p in pieces for half in (p[: len(p) // 2], p[len(p) // 2 :]) if half]


EVENTS = [b'data: {"n": 1}\n\n', b'data: {"n": 2}\n\ndata: [DONE]\n\n']


@pytest.mark.parametrize(
    ("head", "body"),
    [
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", chunked(*EVENTS)),
        (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n", EVENTS),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            halves(chunked(b"data: {", b'"n": 1}\n\n', EVENTS[1])),
        ),
    ],
    ids=["chunked", "plain", "chunk-split-mid-event"],
)
def test_events_in_order_with_their_arrival(head: bytes, body: list[bytes]) -> None:
    pieces = iter([head, *body, b""])
    result = _read(lambda: next(pieces), sent=0.0, where="h")
    assert result.status == 200
    assert [data for _, data in result.events] == ['{"n": 1}', '{"n": 2}', "[DONE]"]
    stamps = [stamp for stamp, _ in result.events]
    assert stamps == sorted(stamps) and stamps[0] > 0.0
