"""The HTTP side of the SGLang stand-in: SGLang's routes over the vLLM stand-in's generation.

Generation (OpenAI chat and completions, streamed too, the scheduler's timing, the stuck
switch) is the vLLM stand-in's `server.Handler`; this adds what SGLang serves differently:
`/health` and `/health_generate` (200 once up), `/v1/models` (id = served name,
`max_model_len`), `/get_model_info` and `/model_info`, `/get_server_info` (its version),
and `/metrics` only with `--enable-metrics`, under SGLang's names
(`srt/observability/metrics_collector.py`): `sglang:num_running_reqs`,
`sglang:num_queue_reqs`, `sglang:gen_throughput`, `sglang:token_usage`,
`sglang:prompt_tokens_total`, `sglang:generation_tokens_total`,
`sglang:num_requests_total` and, with speculative decoding, `sglang:spec_verify_calls_total`,
`sglang:spec_accept_length` and `sglang:spec_accept_rate`.
"""

from __future__ import annotations

import os
from typing import Any

from .. import payloads as p
from ..httpbase import make_server
from ..server import EngineState, Handler
from . import startlog


class SglangLog:
    """What the shared handler logs through (request lines are not logged)."""

    def info(self, key: str, message: str) -> None:
        startlog.line(message)

    def raw(self, message: str) -> None:
        startlog.raw(message)


def metrics_text(state: EngineState) -> str:
    """SGLang's Prometheus text for this engine."""
    sched, name = state.scheduler, state.names[0]
    running, waiting = sched.gauges()
    rank = f'model_name="{name}",engine_type="unified",tp_rank="0",pp_rank="0",moe_ep_rank="0"'
    token = f'model_name="{name}",engine_type="unified",is_streaming="true"'
    rows = [
        ("num_running_reqs", "gauge", rank, running),
        ("num_queue_reqs", "gauge", rank, waiting),
        ("gen_throughput", "gauge", rank, running * sched.token_rate),
        ("token_usage", "gauge", rank, sched.kv_usage()),
        ("prompt_tokens_total", "counter", token, sched.prompt_tokens),
        ("generation_tokens_total", "counter", token, sched.generation_tokens),
        ("num_requests_total", "counter", f'model_name="{name}"', sched.finished),
    ]
    if state.spec is not None:
        drafts, drafted, accepted, _ = state.spec.snapshot()
        rows += [
            ("spec_verify_calls_total", "counter", f'model_name="{name}"', drafts),
            ("spec_accept_length", "gauge", rank, 1 + accepted / drafts if drafts else 0.0),
            ("spec_accept_rate", "gauge", rank, accepted / drafted if drafted else 0.0),
        ]
    out = []
    for metric, kind, labels, value in rows:
        out += [f"# TYPE sglang:{metric} {kind}", f"sglang:{metric}{{{labels}}} {float(value)}"]
    return "\n".join(out) + "\n"


class SglangHandler(Handler):
    """SGLang's GET routes; POST routes (completions) are the shared handler's."""

    def do_GET(self) -> None:
        state = self.state
        cfg = state.cfg
        if self.route in ("/health", "/health_generate"):
            self.send_text(200 if state.healthy else 503, "")
        elif self.route == "/v1/models":
            self.send_json(200, p.models_list(state.names, state.names[0], cfg["max_model_len"]))
        elif self.route in ("/get_model_info", "/model_info"):
            info = {
                "model_path": cfg["model"],
                "served_model_name": state.names[0],
                "tokenizer_path": cfg["model"],
                "is_generation": True,
                "weight_version": "default",
            }
            self.send_json(200, info)
        elif self.route == "/get_server_info":
            self.send_json(200, {"version": cfg["version"], "model_path": cfg["model"]})
        elif self.route == "/metrics" and cfg["metrics"]:
            self.send_text(200, metrics_text(state), "text/plain; version=0.0.4; charset=utf-8")
        else:
            self.send_json(404, {"detail": "Not Found"})


def serve_forever(cfg: dict[str, Any], host: str, port: int) -> None:
    """Bind, say the server is up, serve until the process ends."""
    state = EngineState(cfg, SglangLog(), None)  # type: ignore[arg-type]
    handler = type("BoundHandler", (SglangHandler,), {"state": state})
    httpd = make_server(host, port, handler)
    startlog.raw(f"INFO:     Started server process [{os.getpid()}]")
    startlog.raw("INFO:     Waiting for application startup.")
    startlog.raw("INFO:     Application startup complete.")
    startlog.raw(f"INFO:     Uvicorn running on http://{host}:{port} (Press CTRL+C to quit)")
    startlog.line(startlog.READY)
    httpd.serve_forever()
