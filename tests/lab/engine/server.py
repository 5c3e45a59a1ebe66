"""The OpenAI-compatible HTTP side of the vLLM stand-in (the API server process).

Serves /health, /v1/models, /v1/chat/completions and /v1/completions (also streamed),
/v1/embeddings, /tokenize, /version and /metrics. Answers name the served model, so a test
can tell which seat answered. Generation is measured behaviour (scheduler.py): at most
--max-num-seqs requests run, the rest wait; prefill takes prompt tokens /
FLEET_LAB_PREFILL_RATE; decoding yields one token per FLEET_LAB_TOKEN_RATE-th of a second,
one per SSE chunk. With --speculative-config, the spec-decode counters follow
FLEET_LAB_SPEC_ACCEPTANCE (specdecode.py); FLEET_LAB_OOM_AT_TOKENS kills the engine on a
deep prompt (oom.py); the stuck switch holds generation (scheduler.StuckSwitch).
"""

from __future__ import annotations

import os
from typing import Any

from . import payloads as p
from .httpbase import JsonHandler, make_server
from .lifeline import EngineLink
from .logfmt import Log
from .metrics import metrics_text
from .oom import stream_error_lines
from .scheduler import EngineDead, Request, Scheduler, env_float, env_int
from .specdecode import DraftState, SpecDecode
from .statlog import start_stat_logger
from .tokens import answer_words, count_prompt, tokenize_body

ROUTES = (
    ("/health", "GET"),
    ("/tokenize", "POST"),
    ("/v1/models", "GET"),
    ("/metrics", "GET"),
    ("/v1/chat/completions", "POST"),
    ("/v1/completions", "POST"),
)


class EngineState:
    """What the handlers share: settings, the served names, the scheduler and counters."""

    def __init__(self, cfg: dict[str, Any], log: Log, link: EngineLink | None) -> None:
        self.cfg = cfg
        self.log = log
        self.link = link
        self.version: str = cfg["version"]
        self.names: list[str] = cfg["served_names"]
        self.healthy = cfg.get("fail") != "never-healthy"
        self.oom_at = env_int("FLEET_LAB_OOM_AT_TOKENS")
        self.scheduler = Scheduler(
            slots=cfg["max_num_seqs"],
            token_rate=env_float("FLEET_LAB_TOKEN_RATE", 50.0),
            prefill_rate=env_float("FLEET_LAB_PREFILL_RATE", 50_000.0),
            kv_tokens=cfg.get("kv_tokens"),
        )
        spec = cfg.get("speculative")
        acceptance = env_float("FLEET_LAB_SPEC_ACCEPTANCE", 0.7)
        self.spec = SpecDecode.from_config(spec, acceptance) if spec else None
        self.scheduler.on_token = self.count_draft

    def count_draft(self, request: Request) -> None:
        """Drive the spec-decode counters as a token is generated."""
        if self.spec is not None:
            self.spec.on_token(request.extra.setdefault("draft", DraftState()))

    @property
    def dead(self) -> bool:
        """Whether the engine died (the OOM switch)."""
        return self.link is not None and self.link.dead.is_set()

    def kill_with_oom(self, prompt: int) -> None:
        """The OOM switch fired: the engine dies, running requests abort."""
        if self.link is not None:
            self.link.kill_with_oom(prompt)
        self.scheduler.dead.set()


class Handler(JsonHandler):
    """vLLM's routes on one connection."""

    server_version = "uvicorn"
    state: EngineState

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """Uvicorn's access-log line."""
        phrase = self.responses.get(int(code), ("",))[0] if str(code).isdigit() else ""
        host, port = self.client_address[:2]
        self.state.log.raw(f'INFO:     {host}:{port} - "{self.requestline}" {code} {phrase}')

    def error(self, code: int, message: str, kind: str, param: str | None = None) -> None:
        """An error reply in the version's shape."""
        self.send_json(code, p.error_body(self.state.version, message, kind, code, param))

    def do_GET(self) -> None:
        """Health, model list, version and metrics."""
        state = self.state
        if self.route in ("/health", "/ping"):
            self.send_text(200 if state.healthy and not state.dead else 503, "")
        elif self.route == "/v1/models":
            self.send_json(
                200, p.models_list(state.names, state.cfg["model"], state.cfg["max_model_len"])
            )
        elif self.route == "/version":
            self.send_json(200, {"version": state.version})
        elif self.route == "/metrics":
            text = metrics_text(state.cfg, state.names[0], state.scheduler, state.spec)
            self.send_text(200, text, "text/plain; version=0.0.4; charset=utf-8")
        else:
            self.send_json(404, {"detail": "Not Found"})

    def do_POST(self) -> None:
        """Completions, embeddings and tokenization."""
        body = self.read_json()
        if body is None:
            self.error(400, "Invalid JSON body", "BadRequestError")
        elif self.route in ("/v1/chat/completions", "/v1/completions"):
            self.complete(body, chat=self.route.endswith("chat/completions"))
        elif self.route == "/v1/embeddings":
            self.embed(body)
        elif self.route == "/tokenize":
            self.tokenize(body)
        else:
            self.send_json(404, {"detail": "Not Found"})

    def known_model(self, body: dict[str, Any]) -> str | None:
        """The requested served name, or None after answering 404."""
        name = body.get("model") or self.state.names[0]
        if name in self.state.names:
            return str(name)
        self.error(404, f"The model `{name}` does not exist.", "NotFoundError", "model")
        return None

    def tokenize(self, body: dict[str, Any]) -> None:
        """POST /tokenize: the tokens the chat and completion endpoints count."""
        if self.known_model(body) is None:
            return
        tokens = tokenize_body(body)
        max_len = self.state.cfg["max_model_len"]
        self.send_json(200, p.tokenize_reply(tokens, max_len, bool(body.get("return_token_strs"))))

    def complete(self, body: dict[str, Any], chat: bool) -> None:
        """Generate an answer that names the seat, whole or streamed."""
        name = self.known_model(body)
        if name is None:
            return
        if self.state.dead:
            self.send_text(500, "")  # EngineDeadError reaches vLLM's exception handler
            return
        limit = body.get("max_tokens") or body.get("max_completion_tokens")
        prompt = count_prompt(body)
        too_long = p.context_error(self.state.cfg["max_model_len"], prompt, limit)
        if too_long:
            self.error(400, too_long, "BadRequestError")
            return
        words = answer_words(name, int(limit) if limit else 5)
        finish = "length" if limit else "stop"
        stream = bool(body.get("stream"))
        try:
            if stream:
                self.start_stream()
            self.generate(name, words, finish, chat, prompt, stream, body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def generate(
        self,
        name: str,
        words: list[str],
        finish: str,
        chat: bool,
        prompt: int,
        stream: bool,
        body: dict[str, Any],
    ) -> None:
        """Schedule, prefill and decode one request; the engine may die meanwhile."""
        sched = self.state.scheduler
        cid = p.request_id(chat)
        try:
            with sched.admit(prompt) as request:
                sched.prefill(request)
                if self.state.oom_at is not None and prompt >= self.state.oom_at:
                    self.state.kill_with_oom(prompt)
                    raise EngineDead
                for i, word in enumerate(sched.decode(request, words)):
                    if stream and i == 0 and chat:
                        self.event(
                            p.chunk(cid, name, {"role": "assistant", "content": ""}, None, chat)
                        )
                    if stream:
                        self.event(
                            p.chunk(cid, name, {"content": word} if chat else word, None, chat)
                        )
        except EngineDead:
            self.fail_dead(stream)
            return
        if not stream:
            self.send_json(200, p.completion(name, words, finish, chat, prompt))
            return
        self.event(p.chunk(cid, name, {} if chat else "", finish, chat))
        if (body.get("stream_options") or {}).get("include_usage"):
            last = {**p.chunk(cid, name, {}, None, chat), "choices": []}
            self.event({**last, "usage": p.usage(prompt, len(words))})
        self.end_stream()

    def fail_dead(self, stream: bool) -> None:
        """The engine died under this request: 500, or an error event in a stream."""
        if not stream:
            self.send_text(500, "")
            return
        stream_error_lines(self.state.log)
        self.event(p.error_body(self.state.version, p.ENGINE_DEAD, "InternalServerError", 500))
        self.end_stream()

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
        reply = {"object": "list", "model": name, "data": data, "usage": p.usage(len(inputs), 0)}
        self.send_json(200, reply)


def serve_forever(
    cfg: dict[str, Any], log: Log, host: str, port: int, link: EngineLink | None = None
) -> None:
    """Bind and serve until the process ends."""
    state = EngineState(cfg, log, link)
    handler = type("BoundHandler", (Handler,), {"state": state})
    httpd = make_server(host, port, handler)
    log.info("serve", f"Starting vLLM API server 0 on http://{host}:{port}")
    log.info("routes", "Available routes are:")
    for route, methods in ROUTES:
        log.info("routes", f"Route: {route}, Methods: {methods}")
    log.raw(f"INFO:     Started server process [{os.getpid()}]")
    log.raw("INFO:     Waiting for application startup.")
    log.raw("INFO:     Application startup complete.")
    start_stat_logger(log, state.scheduler, state.spec)
    httpd.serve_forever()
