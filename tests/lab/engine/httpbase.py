"""The HTTP plumbing both stand-ins share: JSON and text replies, SSE over chunked bodies.

Each engine subclasses JsonHandler for its routes and its access-log line. Connections
are HTTP/1.1 keep-alive; a stream is `Transfer-Encoding: chunked`, one SSE event per
chunk, flushed as it is written so a client sees each token when it is generated.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class JsonHandler(BaseHTTPRequestHandler):
    """One HTTP/1.1 connection with JSON helpers."""

    protocol_version = "HTTP/1.1"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        """Silence http.server's own stderr lines (engines print their own)."""

    def send_json(self, code: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        """A complete JSON response."""
        self.send_bytes(code, json.dumps(payload).encode(), "application/json", headers)

    def send_text(self, code: int, text: str, ctype: str = "text/plain; charset=utf-8") -> None:
        """A complete text response."""
        self.send_bytes(code, text.encode(), ctype)

    def send_bytes(
        self, code: int, data: bytes, ctype: str, headers: dict[str, str] | None = None
    ) -> None:
        """A complete response with a body."""
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def start_stream(self) -> None:
        """200 with a chunked server-sent-events body to follow."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def event(self, payload: Any) -> None:
        """One SSE `data:` event."""
        self.write_chunk(f"data: {json.dumps(payload)}\n\n".encode())

    def end_stream(self) -> None:
        """`data: [DONE]` and the end of the chunked body."""
        self.write_chunk(b"data: [DONE]\n\n")
        self.write_chunk(b"")

    def write_chunk(self, data: bytes) -> None:
        """One chunk of a chunked body (b'' ends it)."""
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def read_json(self) -> dict[str, Any] | None:
        """The request body as a JSON object, or None."""
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            return None
        return body if isinstance(body, dict) else None

    @property
    def route(self) -> str:
        """The request path without its query string."""
        return self.path.split("?")[0]


def make_server(host: str, port: int, handler: type[JsonHandler]) -> ThreadingHTTPServer:
    """A threading server whose request threads do not keep the process alive."""
    httpd = ThreadingHTTPServer((host, port), handler)
    httpd.daemon_threads = True
    return httpd
