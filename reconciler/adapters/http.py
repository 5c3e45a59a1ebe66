"""Plain HTTP/1.1 requests over an SSH direct-tcpip channel.

Used to probe engines and gateway backends *from the host that would reach them* (a
channel of that host's SSH connection), and to verify aliases through the proxy.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from fleet.errors import HostError, HostUnreachable
from reconciler.host import HostSession

MAX_REPLY_BYTES = 32 * 1024 * 1024  # an engine's /metrics or model list is well under this


@dataclass(frozen=True)
class HttpReply:
    """Status and body of one HTTP exchange."""

    status: int
    body: str

    def json(self) -> Any:
        """The body as JSON; None if it is not JSON (or nests past what Python can read)."""
        try:
            return json.loads(self.body)
        except (ValueError, RecursionError):
            return None


def request_via(
    conn: HostSession,
    address: str,
    port: int,
    method: str,
    path: str,
    body: Any = None,
    timeout: float = 10.0,
    headers: dict[str, str] | None = None,
) -> HttpReply:
    """One request to address:port opened from the host of `conn`."""
    channel = conn.open_tcp(address, port, timeout=timeout)
    conn.journal.append(("http", f"{method} {address}:{port}{path}"))
    try:
        channel.settimeout(timeout)
        channel.sendall(request_bytes(method, address, port, path, body, headers))
        raw = bytearray()
        while chunk := channel.recv(65536):
            raw.extend(chunk)
            if len(raw) > MAX_REPLY_BYTES:
                raise HostError(
                    f"{address}:{port} answered {method} {path} with more than "
                    f"{MAX_REPLY_BYTES} bytes",
                    where=conn.name,
                )
    except OSError as err:
        raise HostUnreachable(
            f"{address}:{port} did not answer {method} {path}: {err}", where=conn.name
        ) from err
    finally:
        channel.close()
    return _parse_reply(bytes(raw), conn.name)


def request_bytes(
    method: str,
    address: str,
    port: int,
    path: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
) -> bytes:
    """One HTTP/1.1 request as sent on a channel: a JSON body, the connection then closed."""
    payload = json.dumps(body).encode() if body is not None else b""
    extra = "".join(f"{name}: {value}\r\n" for name, value in sorted((headers or {}).items()))
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: {address}:{port}\r\nConnection: close\r\n"
        f"{extra}Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n"
    )
    return head.encode() + payload


def _parse_reply(raw: bytes, where: str) -> HttpReply:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode(errors="replace").split("\r\n")
    parts = lines[0].split(" ", 2) if lines else []
    if len(parts) < 2 or not (parts[1].isascii() and parts[1].isdigit()):
        raise HostError(f"not an HTTP reply: {lines[0][:80] if lines else 'empty'}", where=where)
    if any(line.lower().startswith("transfer-encoding: chunked") for line in lines):
        try:
            body = _unchunk(body)
        except ValueError as err:
            raise HostError(f"HTTP reply with a bad chunk: {err}", where=where) from err
    return HttpReply(int(parts[1]), body.decode(errors="replace"))


def _unchunk(body: bytes) -> bytes:
    """A chunked body's bytes; ValueError on a chunk size that is not hex."""
    out = bytearray()
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size_text = size_line.split(b";")[0].strip() or b"0"
        if len(size_text) > 16 or not all(c in b"0123456789abcdefABCDEF" for c in size_text):
            raise ValueError(f"chunk size {size_text[:20]!r} is not hex")
        size = int(size_text, 16)
        if size == 0:
            break
        out += rest[:size]
        body = rest[size + 2 :]
    return bytes(out)
