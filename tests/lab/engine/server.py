"""The OpenAI-compatible HTTP side of the stand-in (the API server process).

Serves /health, /v1/models, /v1/chat/completions (also streamed, at a token rate),
/v1/completions, /v1/embeddings, /version and /metrics. Answers name the served model,
so a test can tell which seat answered. In-flight requests are really counted for the
`vllm:num_requests_running` / `vllm:num_requests_waiting` gauges.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .logfmt import Log, series


class EngineState:
    """What the handlers share: settings, the served names and the request gauges."""

    def __init__(self, cfg: dict[str, Any], log: Log) -> None:
        self.cfg = cfg
        self.log = log
        self.names: list[str] = cfg["served_names"]
        self.rate = float(os.environ.get("FLEET_LAB_TOKEN_RATE", "50"))
        self.healthy = cfg.get("fail") != "never-healthy"
        self.lock = threading.Lock()
        self.in_flight = 0
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.finished = 0

    def enter(self) -> None:
        """A request starts."""
        with self.lock:
            self.in_flight += 1

    def leave(self, prompt: int, generated: int) -> None:
        """A request ends."""
        with self.lock:
            self.in_flight -= 1
            self.prompt_tokens += prompt
            self.generation_tokens += generated
            self.finished += 1

    def gauges(self) -> tuple[int, int]:
        """(running, waiting): requests beyond max_num_seqs wait."""
        with self.lock:
            running = min(self.in_flight, self.cfg["max_num_seqs"])
            return running, self.in_flight - running


def answer_words(name: str, max_tokens: int) -> list[str]:
    """The generated text as tokens (one word each); it names the seat that answered."""
    head = f"This is {name} answering.".split()
    filler = [f"token{i}" for i in range(max(max_tokens - len(head), 0))]
    return [w + " " for w in (head + filler)[: max(max_tokens, 1)]]


def count_prompt(body: dict[str, Any]) -> int:
    """A rough prompt token count (words)."""
    if "messages" in body:
        return sum(len(str(m.get("content", "")).split()) for m in body["messages"]) + 4
    return len(str(body.get("prompt", "")).split())


def metrics_text(state: EngineState) -> str:
    """Prometheus exposition of the gauges and counters vLLM exports."""
    running, waiting = state.gauges()
    engine = "" if series(state.cfg["version"]) == "0.9" else 'engine="0",'
    label = f'{{{engine}model_name="{state.names[0]}"}}'
    usage = (
        "gpu_cache_usage_perc" if series(state.cfg["version"]) == "0.9" else "kv_cache_usage_perc"
    )
    rows = [
        (
            "num_requests_running",
            "gauge",
            "Number of requests in model execution batches.",
            running,
        ),
        ("num_requests_waiting", "gauge", "Number of requests waiting to be processed.", waiting),
        (usage, "gauge", "KV-cache usage. 1 means 100 percent usage.", min(running / 100, 1.0)),
        (
            "prompt_tokens_total",
            "counter",
            "Number of prefill tokens processed.",
            state.prompt_tokens,
        ),
        (
            "generation_tokens_total",
            "counter",
            "Number of generation tokens processed.",
            state.generation_tokens,
        ),
        (
            "request_success_total",
            "counter",
            "Count of successfully processed requests.",
            state.finished,
        ),
    ]
    out = []
    for name, kind, doc, value in rows:
        out += [
            f"# HELP vllm:{name} {doc}",
            f"# TYPE vllm:{name} {kind}",
            f"vllm:{name}{label} {float(value)}",
        ]
    return "\n".join(out) + "\n"


class Handler(BaseHTTPRequestHandler):
    """One HTTP/1.1 connection (keep-alive; chunked for streams)."""

    protocol_version = "HTTP/1.1"
    server_version = "uvicorn"
    sys_version = ""
    state: EngineState

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """Uvicorn's access-log line."""
        phrase = self.responses.get(int(code), ("",))[0] if str(code).isdigit() else ""
        host, port = self.client_address[:2]
        self.state.log.raw(f'INFO:     {host}:{port} - "{self.requestline}" {code} {phrase}')

    def log_message(self, format: str, *args: Any) -> None:
        """Silence http.server's own stderr lines."""

    def send_json(self, code: int, payload: Any) -> None:
        """A complete JSON response."""
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_text(self, code: int, text: str, ctype: str = "text/plain; charset=utf-8") -> None:
        """A complete text response."""
        data = text.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        """Health, model list, version and metrics."""
        path = self.path.split("?")[0]
        if path in ("/health", "/ping"):
            self.send_text(200 if self.state.healthy else 503, "")
        elif path == "/v1/models":
            self.send_json(200, self.models())
        elif path == "/version":
            self.send_json(200, {"version": self.state.cfg["version"]})
        elif path == "/metrics":
            self.send_text(200, metrics_text(self.state), "text/plain; version=0.0.4")
        else:
            self.send_json(404, {"detail": "Not Found"})

    def do_POST(self) -> None:
        """Chat and text completions, embeddings."""
        path = self.path.split("?")[0]
        body = self.read_json()
        if body is None:
            self.send_json(400, self.error_body("Invalid JSON body", "BadRequestError", 400))
        elif path in ("/v1/chat/completions", "/v1/completions"):
            self.complete(body, chat=path.endswith("chat/completions"))
        elif path == "/v1/embeddings":
            self.embed(body)
        else:
            self.send_json(404, {"detail": "Not Found"})

    def read_json(self) -> dict[str, Any] | None:
        """The request body as a JSON object, or None."""
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            return None
        return body if isinstance(body, dict) else None

    def error_body(self, message: str, kind: str, code: int, param: str | None = None) -> Any:
        """vLLM's error payload (flat before 0.10, nested under "error" since)."""
        if series(self.state.cfg["version"]) == "0.9":
            return {
                "object": "error",
                "message": message,
                "type": kind,
                "param": None,
                "code": code,
            }
        return {"error": {"message": message, "type": kind, "param": param, "code": code}}

    def models(self) -> dict[str, Any]:
        """/v1/models: one entry per served name."""
        created = int(time.time())
        data = [
            {
                "id": name,
                "object": "model",
                "created": created,
                "owned_by": "vllm",
                "root": self.state.cfg["model"],
                "parent": None,
                "max_model_len": self.state.cfg["max_model_len"],
            }
            for name in self.state.names
        ]
        return {"object": "list", "data": data}

    def known_model(self, body: dict[str, Any]) -> str | None:
        """The requested served name, or None after answering 404."""
        name = body.get("model") or self.state.names[0]
        if name in self.state.names:
            return str(name)
        message = f"The model `{name}` does not exist."
        self.send_json(404, self.error_body(message, "NotFoundError", 404, "model"))
        return None

    def complete(self, body: dict[str, Any], chat: bool) -> None:
        """Generate an answer that names the seat, whole or streamed."""
        name = self.known_model(body)
        if name is None:
            return
        limit = body.get("max_tokens") or body.get("max_completion_tokens")
        words = answer_words(name, int(limit) if limit else 5)
        finish = "length" if limit else "stop"
        prompt = count_prompt(body)
        self.state.enter()
        try:
            if body.get("stream"):
                self.stream(name, words, finish, chat, prompt, body)
            else:
                time.sleep(len(words) / self.state.rate)
                self.send_json(200, completion(name, words, finish, chat, prompt))
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            self.state.leave(prompt, len(words))

    def stream(
        self,
        name: str,
        words: list[str],
        finish: str,
        chat: bool,
        prompt: int,
        body: dict[str, Any],
    ) -> None:
        """Server-sent events, one token per chunk at the configured rate."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        cid = f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex}"
        if chat:
            self.event(chunk(cid, name, {"role": "assistant", "content": ""}, None, chat))
        for word in words:
            time.sleep(1 / self.state.rate)
            self.event(chunk(cid, name, {"content": word} if chat else word, None, chat))
        self.event(chunk(cid, name, {} if chat else "", finish, chat))
        if (body.get("stream_options") or {}).get("include_usage"):
            self.event(
                {
                    **chunk(cid, name, {}, None, chat),
                    "choices": [],
                    "usage": usage(prompt, len(words)),
                }
            )
        self.write_chunk(b"data: [DONE]\n\n")
        self.write_chunk(b"")

    def event(self, payload: dict[str, Any]) -> None:
        """One SSE `data:` event."""
        self.write_chunk(f"data: {json.dumps(payload)}\n\n".encode())

    def write_chunk(self, data: bytes) -> None:
        """One chunk of a chunked body (b'' ends it)."""
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def embed(self, body: dict[str, Any]) -> None:
        """A small deterministic embedding per input."""
        name = self.known_model(body)
        if name is None:
            return
        inputs = body.get("input") or [""]
        inputs = inputs if isinstance(inputs, list) else [inputs]
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": [((hash(str(t)) >> s) % 1000) / 1000 for s in range(0, 64, 8)],
            }
            for i, t in enumerate(inputs)
        ]
        self.send_json(
            200, {"object": "list", "model": name, "data": data, "usage": usage(len(inputs), 0)}
        )


def usage(prompt: int, completion_tokens: int) -> dict[str, int]:
    """The OpenAI usage block."""
    return {
        "prompt_tokens": prompt,
        "total_tokens": prompt + completion_tokens,
        "completion_tokens": completion_tokens,
    }


def completion(name: str, words: list[str], finish: str, chat: bool, prompt: int) -> dict[str, Any]:
    """A non-streamed chat or text completion."""
    text = "".join(words).strip()
    if chat:
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": text, "tool_calls": []},
            "logprobs": None,
            "finish_reason": finish,
        }
    else:
        choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": finish}
    kind = "chat.completion" if chat else "text_completion"
    return {
        "id": f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex}",
        "object": kind,
        "created": int(time.time()),
        "model": name,
        "choices": [choice],
        "usage": usage(prompt, len(words)),
    }


def chunk(cid: str, name: str, delta: Any, finish: str | None, chat: bool) -> dict[str, Any]:
    """One streamed chunk."""
    if chat:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    else:
        choice = {"index": 0, "text": delta, "logprobs": None, "finish_reason": finish}
    kind = "chat.completion.chunk" if chat else "text_completion"
    return {
        "id": cid,
        "object": kind,
        "created": int(time.time()),
        "model": name,
        "choices": [choice],
    }


def serve_forever(cfg: dict[str, Any], log: Log, host: str, port: int) -> None:
    """Bind and serve until the process ends."""
    handler = type("BoundHandler", (Handler,), {"state": EngineState(cfg, log)})
    httpd = ThreadingHTTPServer((host, port), handler)
    httpd.daemon_threads = True
    log.info("serve", f"Starting vLLM API server 0 on http://{host}:{port}")
    log.info("routes", "Available routes are:")
    for route, methods in (
        ("/health", "GET"),
        ("/v1/models", "GET"),
        ("/metrics", "GET"),
        ("/v1/chat/completions", "POST"),
        ("/v1/completions", "POST"),
    ):
        log.info("routes", f"Route: {route}, Methods: {methods}")
    log.raw(f"INFO:     Started server process [{os.getpid()}]")
    log.raw("INFO:     Waiting for application startup.")
    log.raw("INFO:     Application startup complete.")
    httpd.serve_forever()
