"""An HTTP exchange over a fake host's TCP stream: `Reply` and the `FakeChannel` that
answers one request from a route table (what `FakeHost.open_tcp` hands out)."""

from __future__ import annotations

from dataclasses import dataclass, field
from http import HTTPStatus


@dataclass(frozen=True)
class Reply:
    """One canned HTTP answer."""

    status: int
    body: str = ""


@dataclass
class FakeChannel:
    """A TCP stream that answers one HTTP request from a route table."""

    routes: dict[str, list[Reply]]
    sent: bytearray = field(default_factory=bytearray)
    timeout: float | None = None
    closed: bool = False
    _reply: bytes = b""

    def settimeout(self, timeout: float | None, /) -> None:
        self.timeout = timeout

    def sendall(self, data: bytes, /) -> None:
        self.sent += data
        if b"\r\n\r\n" in self.sent and not self._reply:
            path = self.sent.split(b" ", 2)[1].decode()
            replies = self.routes.get(path) or [Reply(404, "not found")]
            reply = replies.pop(0) if len(replies) > 1 else replies[0]
            body = reply.body.encode()
            self._reply = (
                f"HTTP/1.1 {reply.status} {HTTPStatus(reply.status).phrase}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            ).encode() + body

    def recv(self, size: int, /) -> bytes:
        chunk, self._reply = self._reply[:size], self._reply[size:]
        return chunk

    def close(self) -> None:
        self.closed = True
