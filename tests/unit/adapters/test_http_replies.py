"""An odd HTTP reply from a host is one clear HostError or a body that is not JSON, never
an internal error: a chunk size that is not hex, JSON nested past Python's recursion, a
status written in other digits, and a reply larger than fleet reads."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from fleet.errors import HostError
from reconciler.adapters import http
from reconciler.adapters.http import request_via
from reconciler.workflows import bench
from tests.fakes.host import FakeHost


@dataclass
class RawChannel:
    """A TCP stream that answers with these bytes, whatever was asked."""

    reply: bytes

    def settimeout(self, timeout: float | None, /) -> None:
        pass

    def sendall(self, data: bytes, /) -> None:
        pass

    def recv(self, size: int, /) -> bytes:
        chunk, self.reply = self.reply[:size], self.reply[size:]
        return chunk

    def close(self) -> None:
        pass


class RawHost(FakeHost):
    def __init__(self, reply: bytes) -> None:
        super().__init__("tower")
        self.reply = reply

    def open_tcp(self, address: str, port: int, timeout: float = 5.0) -> RawChannel:  # type: ignore[override]
        return RawChannel(self.reply)


CHUNKED = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
ERRORS = [
    ("chunk-not-hex", CHUNKED + b"zz\r\nabc\r\n0\r\n\r\n", "bad chunk"),
    ("chunk-0x", CHUNKED + b"0x10\r\nabc\r\n0\r\n\r\n", "bad chunk"),
    ("status-other-digits", "HTTP/1.1 ²⁰⁰ OK\r\n\r\n".encode(), "not an HTTP reply"),
]


@pytest.mark.parametrize(("raw", "said"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_an_odd_reply_is_a_host_error(raw: bytes, said: str) -> None:
    with pytest.raises(HostError, match=said) as caught:
        request_via(RawHost(raw), "127.0.0.1", 8000, "GET", "/v1/models")
    assert caught.value.where == "tower"


def test_json_nested_past_recursion_is_not_json() -> None:
    body = b"[" * 200_000 + b"]" * 200_000
    raw = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    reply = request_via(RawHost(raw), "127.0.0.1", 8000, "GET", "/v1/models")
    assert reply.status == 200 and reply.json() is None


def test_a_reply_larger_than_the_bound_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http, "MAX_REPLY_BYTES", 1000)
    raw = b"HTTP/1.1 200 OK\r\n\r\n" + b"x" * 5000
    with pytest.raises(HostError, match="more than 1000 bytes"):
        request_via(RawHost(raw), "127.0.0.1", 8000, "GET", "/metrics")


def test_a_well_formed_chunked_reply_still_reads() -> None:
    raw = CHUNKED + b"3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n"
    assert request_via(RawHost(raw), "127.0.0.1", 8000, "GET", "/").body == "abcde"


@pytest.mark.parametrize(
    "data",
    ['{"choices": {"a": 1}}', '{"choices": [5]}', '{"choices": [{"delta": 5}]}', "[" * 100_000],
    ids=["choices-a-map", "choice-an-int", "delta-an-int", "nested-past-recursion"],
)
def test_a_streamed_event_of_any_shape_has_no_content(data: str) -> None:
    assert bench._has_content(data) is False
