"""llama-server's HTTP side: health while loading, the OpenAI API, props, slots, metrics.

Until the model is loaded every route answers 503 `Loading model` (type
`unavailable_error`), /health included; then /health answers `{"status":"ok"}`. Requests
take one of --parallel slots (the others wait: `requests_deferred`), prefill and decode at
the shared scheduler's rates, and log llama-server's per-request slot lines. /metrics
needs --metrics and /slots is on unless --no-slots, as in llama-server (501 otherwise).
llama-server serves one model and ignores the request's `model`.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

from ..httpbase import JsonHandler
from ..scheduler import EngineDead, Scheduler
from ..specdecode import DraftState, SpecDecode
from ..tokens import answer_words, count_prompt, tokenize_body
from . import replies
from .startlog import emit, slot, srv

TYPES = {
    400: "invalid_request_error",
    404: "not_found_error",
    500: "server_error",
    501: "not_supported_error",
    503: "unavailable_error",
}
QUIET = ("/v1/health", "/v1/completions")  # llama-server does not log these


class LlamaState:
    """What the handlers share: the loaded model's facts, the scheduler and slot ids."""

    def __init__(self, info: dict[str, Any], sched: Scheduler, acceptance: float) -> None:
        self.info = info
        self.sched = sched
        self.acceptance = acceptance
        self.ready = threading.Event()
        self.lock = threading.Lock()
        self.free_ids = list(range(sched.slots))
        self.busy: dict[int, int] = {}  # slot id -> task id
        self.tasks = 0
        self.n_decode = 0
        self.busy_sum = 0
        self.started = int(time.time())
        self.spec_totals = {"draft_tokens": 0, "accepted": 0, "drafts": 0}

    def add_spec(self, spec: SpecDecode | None) -> None:
        """One finished request's draft counts, into /metrics' spec_decode counters."""
        if spec is None:
            return
        with self.lock:
            for key in self.spec_totals:
                self.spec_totals[key] += getattr(spec, key)

    def take_slot(self) -> tuple[int, int]:
        """The lowest free slot id and a new task id."""
        with self.lock:
            slot_id = self.free_ids.pop(0)
            task, self.tasks = self.tasks, self.tasks + 1
            self.busy[slot_id] = task
            return slot_id, task

    def give_back(self, slot_id: int) -> bool:
        """The slot is idle again; returns whether every slot is."""
        with self.lock:
            self.busy.pop(slot_id, None)
            self.free_ids = sorted([*self.free_ids, slot_id])
            return not self.busy

    def count_decode(self) -> None:
        """One llama_decode() call over the busy slots."""
        with self.lock:
            self.n_decode += 1
            self.busy_sum += len(self.busy)


class Handler(JsonHandler):
    """llama-server's routes on one connection."""

    server_version = "llama.cpp"
    state: LlamaState

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """`srv  log_server_r: request: POST /path 127.0.0.1 200`."""
        if self.route not in QUIET:
            host = self.client_address[0]
            emit(srv("log_server_r", f"request: {self.command} {self.route} {host} {code}"))

    def error(self, code: int, message: str, kind: str | None = None, **extra: Any) -> None:
        """llama-server's error body (`kind` overrides the type the code implies)."""
        body = {"code": code, "message": message, "type": kind or TYPES.get(code, "server_error")}
        self.send_json(code, {"error": {**body, **extra}})

    def loading(self) -> bool:
        """Answer 503 while the model loads."""
        if self.state.ready.is_set():
            return False
        self.error(503, "Loading model")
        return True

    def do_GET(self) -> None:
        """Health, models, props, slots and metrics."""
        if self.loading():
            return
        info, route = self.state.info, self.route
        if route in ("/health", "/v1/health"):
            self.send_json(200, {"status": "ok"})
        elif route in ("/v1/models", "/models"):
            self.send_json(200, replies.models(info))
        elif route == "/props":
            self.send_json(200, replies.props(info, self.slots_json()[0]))
        elif route == "/slots" and info["slots_endpoint"]:
            self.send_json(200, self.slots_json())
        elif route == "/slots":
            self.error(501, "This server does not support slots endpoint. Start it with `--slots`")
        elif route == "/metrics" and info["metrics_endpoint"]:
            text = replies.metrics(self.state)
            self.send_bytes(
                200,
                text.encode(),
                "text/plain; version=0.0.4",
                {"Process-Start-Time-Unix": str(self.state.started)},
            )
        elif route == "/metrics":
            self.error(
                501, "This server does not support metrics endpoint. Start it with `--metrics`"
            )
        else:
            self.error(404, "File Not Found")

    def do_POST(self) -> None:
        """Completions and tokenization."""
        if self.loading():
            return
        body = self.read_json()
        route = self.route
        if body is None:
            self.error(400, "Invalid JSON body")
        elif route in ("/v1/chat/completions", "/chat/completions"):
            self.complete(body, "chat")
        elif route in ("/v1/completions", "/completions"):
            self.complete(body, "text")
        elif route == "/completion":
            self.complete(body, "native")
        elif route == "/tokenize":
            tokens = tokenize_body(body)
            pieces = [{"id": t, "piece": f"t{t}"} for t in tokens]
            self.send_json(200, {"tokens": pieces if body.get("with_pieces") else tokens})
        else:
            self.error(404, "File Not Found")

    def slots_json(self) -> list[dict[str, Any]]:
        """/slots: every slot's state."""
        with self.state.lock:
            busy = dict(self.state.busy)
        n_ctx = self.state.info["n_ctx_slot"]
        spec = self.state.info["draft"] is not None
        return [
            replies.slot_json(i, busy.get(i, -1), n_ctx, spec)
            for i in range(self.state.sched.slots)
        ]

    def complete(self, body: dict[str, Any], kind: str) -> None:
        """One completion, whole or streamed."""
        prompt = count_prompt(body)
        n_ctx = self.state.info["n_ctx_slot"]
        if prompt >= n_ctx:
            self.error(
                400,
                "the request exceeds the available context size, try increasing it",
                "exceed_context_size_error",
                n_prompt_tokens=prompt,
                n_ctx=n_ctx,
            )
            return
        limit = body.get("max_tokens") or body.get("max_completion_tokens") or body.get("n_predict")
        limit = int(limit) if limit and int(limit) > 0 else None
        name = self.state.info["alias"] or "llama.cpp"
        words = answer_words(name, limit or 5)
        model = str(body.get("model") or self.state.info["model_id"])
        stream = bool(body.get("stream"))
        try:
            if stream:
                self.start_stream()
            self.generate(kind, model, words, prompt, stream, body, limit)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def generate(
        self,
        kind: str,
        model: str,
        words: list[str],
        prompt: int,
        stream: bool,
        body: dict[str, Any],
        limit: int | None,
    ) -> None:
        """Take a slot, prefill, decode, log the slot's timings."""
        state, sched = self.state, self.state.sched
        cid = f"chatcmpl-{uuid.uuid4().hex[:32]}"
        draft = state.info["draft"]
        spec = SpecDecode(state.info["draft_max"], state.acceptance) if draft else None
        try:
            with sched.admit(prompt) as request:
                slot_id, task = state.take_slot()
                try:
                    emit(slot("launch_slot_", slot_id, task, "processing task"))
                    emit(
                        slot(
                            "update_slots",
                            slot_id,
                            task,
                            f"new prompt, n_ctx_slot = "
                            f"{state.info['n_ctx_slot']}, n_keep = 0, n_prompt_tokens = {prompt}",
                        )
                    )
                    prompt_s = sched.prefill(request)
                    state.count_decode()
                    started = time.monotonic()
                    for i, word in enumerate(sched.decode(request, words)):
                        state.count_decode()
                        if spec is not None:
                            spec.on_token(request.extra.setdefault("draft", DraftState()))
                        if stream:
                            for event in replies.stream_chunks(kind, cid, model, word, i == 0):
                                self.event(event)
                    decode_s = time.monotonic() - started
                finally:
                    idle = state.give_back(slot_id)
        except EngineDead:
            return
        finish = "length" if limit and len(words) >= limit else "stop"
        state.add_spec(spec)
        timings = replies.timings(prompt, prompt_s, len(words), decode_s, spec)
        log_timing(slot_id, task, prompt, prompt_s, len(words), decode_s, spec)
        if idle:
            emit(srv("update_slots", "all slots are idle"))
        usage = {
            "completion_tokens": len(words),
            "prompt_tokens": prompt,
            "total_tokens": prompt + len(words),
        }
        if not stream:
            self.send_json(200, replies.whole(kind, cid, model, words, finish, usage, timings))
            return
        self.event(replies.final_chunk(kind, cid, model, finish, timings))
        if (body.get("stream_options") or {}).get("include_usage"):
            self.event(replies.usage_chunk(kind, cid, model, usage))
        self.end_stream()


def log_timing(
    slot_id: int,
    task: int,
    prompt: int,
    prompt_s: float,
    predicted: int,
    decode_s: float,
    spec: SpecDecode | None,
) -> None:
    """The slot's release and print_timing lines."""
    emit(
        slot(
            "release",
            slot_id,
            task,
            f"stop processing: n_past = {prompt + predicted - 1}, truncated = 0",
        )
    )
    p_ms, d_ms = prompt_s * 1000, decode_s * 1000
    lines = [
        slot("print_timing", slot_id, task, ""),
        f"prompt eval time = {p_ms:10.2f} ms / {prompt:5d} tokens ({p_ms / max(prompt, 1):8.2f} "
        f"ms per token, {prompt / max(prompt_s, 1e-9):8.2f} tokens per second)",
        f"       eval time = {d_ms:10.2f} ms / {predicted:5d} tokens ("
        f"{d_ms / max(predicted, 1):8.2f} ms per token, {predicted / max(decode_s, 1e-9):8.2f} "
        "tokens per second)",
        f"      total time = {p_ms + d_ms:10.2f} ms / {prompt + predicted:5d} tokens",
    ]
    if spec is not None and spec.draft_tokens:
        lines.append(
            f"print_timing: draft acceptance rate = {spec.accepted / spec.draft_tokens:0.5f} "
            f"({spec.accepted:5d} accepted / {spec.draft_tokens:5d} generated)"
        )
    for line in lines:
        emit(line)
