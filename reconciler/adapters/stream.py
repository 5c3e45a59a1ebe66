"""Streamed HTTP (server-sent events) with the time each event arrived, for measuring.

`fleet bench` times tokens as they arrive: over an SSH direct-tcpip channel to the seat
(`stream_via`), or straight to the gateway URL (`stream_url`). Both return the status and
the `data:` events with `time.monotonic()` stamps taken when the bytes completing each
event were read. Chunked transfer encoding is undone as the bytes come in.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from fleet.errors import HostError, HostUnreachable
from reconciler.adapters.http import request_bytes
from reconciler.host import HostSession


@dataclass
class Stream:
    """What a streamed request gave: status, when it was sent, its events in order."""

    status: int
    sent_at: float
    events: list[tuple[float, str]] = field(default_factory=list)
    body: str = ""


class _Dechunker:
    """Undoes `Transfer-Encoding: chunked` incrementally."""

    def __init__(self, chunked: bool) -> None:
        self.chunked, self.buffer, self.left = chunked, b"", 0

    def feed(self, data: bytes) -> bytes:
        if not self.chunked:
            return data
        self.buffer += data
        out = b""
        while self.buffer:
            if self.left:
                piece = self.buffer[: self.left]
                out, self.buffer, self.left = (
                    out + piece,
                    self.buffer[len(piece) :],
                    self.left - len(piece),
                )
                continue
            line, sep, rest = self.buffer.partition(b"\r\n")
            if not sep:
                break
            size = int(line.split(b";")[0].strip() or b"0", 16) if line.strip() else -1
            self.buffer = rest
            if size > 0:
                self.left = size
        return out


def _events(pieces: Iterator[tuple[float, bytes]], stream: Stream) -> None:
    """Split the body into `data:` events, each stamped with its completing piece's time."""
    pending = ""
    for stamp, piece in pieces:
        pending += piece.decode(errors="replace").replace("\r\n", "\n")
        stream.body += piece.decode(errors="replace")
        while "\n\n" in pending:
            event, pending = pending.split("\n\n", 1)
            rows = event.splitlines()
            data = "\n".join(row[5:].strip() for row in rows if row.startswith("data:"))
            if data:
                stream.events.append((stamp, data))


def stream_via(
    conn: HostSession, address: str, port: int, path: str, body: Any, timeout: float = 300.0
) -> Stream:
    """A streamed POST to address:port, opened from the host of `conn`."""
    channel = conn.open_tcp(address, port, timeout=timeout)
    conn.journal.append(("http", f"POST {address}:{port}{path} (stream)"))
    request = request_bytes("POST", address, port, path, body)
    try:
        channel.settimeout(timeout)
        sent = time.monotonic()
        channel.sendall(request)
        return _read(lambda: channel.recv(65536), sent, conn.name)
    except OSError as err:
        raise HostUnreachable(
            f"{address}:{port} did not answer POST {path}: {err}", where=conn.name
        ) from err
    finally:
        channel.close()


def _read(recv: Callable[[], bytes], sent: float, where: str) -> Stream:
    raw = b""
    while b"\r\n\r\n" not in raw:
        chunk = recv()
        if not chunk:
            raise HostError("the engine closed the stream before answering", where=where)
        raw += chunk
    head, _, rest = raw.partition(b"\r\n\r\n")
    lines = head.decode(errors="replace").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[1].isdigit():
        raise HostError(f"not an HTTP reply: {lines[0][:80]}", where=where)
    chunked = any(line.lower().startswith("transfer-encoding: chunked") for line in lines)
    dechunk, stream = _Dechunker(chunked), Stream(status=int(parts[1]), sent_at=sent)

    def pieces() -> Iterator[tuple[float, bytes]]:
        yield time.monotonic(), dechunk.feed(rest)
        while chunk := recv():
            yield time.monotonic(), dechunk.feed(chunk)

    _events(pieces(), stream)
    return stream


def stream_url(url: str, body: Any, headers: dict[str, str], timeout: float = 300.0) -> Stream:
    """A streamed POST straight from this machine (through the gateway)."""
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json", **headers},
    )
    sent = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            stream = Stream(status=reply.status, sent_at=sent)
            _events(((time.monotonic(), line) for line in reply), stream)
            return stream
    except urllib.error.HTTPError as err:
        return Stream(status=err.code, sent_at=sent, body=err.read().decode(errors="replace"))
    except (urllib.error.URLError, OSError) as err:
        raise HostUnreachable(f"{url} does not answer: {err}") from err
