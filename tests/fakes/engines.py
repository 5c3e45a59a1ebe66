"""What a healthy engine of each kind says on the fake host: its startup log and /metrics.

The fake host reads a container's argv with fleet's own engine seam
(`fleet.engines.read_process`), so it fakes every engine fleet knows: the served name and
the idle running-requests gauge come from the engine module itself (`METRICS.running`);
only the startup log is written per engine here, in each engine's own format, with KV
tokens of KV_FACTOR x the context (vLLM, SGLang) or one context per slot (llama.cpp).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from fleet.engines import llamacpp, read_process, sglang, vllm
from fleet.facts.argv import EngineArgs

KV_FACTOR = 1.5  # KV-cache tokens a fake engine logs, per token of context


def _vllm_log(args: EngineArgs) -> str:
    context = args.max_model_len or 4096
    return (
        "INFO 12-01 10:00:05 [kv_cache_utils.py:1087] "
        f"GPU KV cache size: {int(context * KV_FACTOR):,} tokens\n"
    )


def _llamacpp_log(args: EngineArgs) -> str:
    slots = args.parallel_slots or 1
    cells = args.ctx_size or 4096 * slots
    return (
        f"llama_context: n_ctx         = {cells}\n"
        f"srv    load_model: initializing slots, n_slots = {slots}\n"
        f"slot         load_model: id  0 | task -1 | new slot, n_ctx = {cells // slots}\n"
        "main: server is listening on http://0.0.0.0:8080 - starting the main loop\n"
    )


def _sglang_log(args: EngineArgs) -> str:
    context = args.max_model_len or 4096
    return (
        f"[2026-12-01 10:00:04 TP0] max_total_num_tokens={int(context * KV_FACTOR)}, "
        "chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=64, "
        f"context_len={context}, available_gpu_mem=4.00 GB\n"
        "[2026-12-01 10:00:09] The server is fired up and ready to roll!\n"
    )


STARTUP_LOGS: dict[str, Callable[[EngineArgs], str]] = {
    vllm.NAME: _vllm_log,
    llamacpp.NAME: _llamacpp_log,
    sglang.NAME: _sglang_log,
}


def engine_log(argv: Sequence[str]) -> str:
    """The startup log of a healthy fake engine started with `argv` ('' for no engine)."""
    args, engine = read_process(argv)
    return STARTUP_LOGS[engine.NAME](args) if engine else ""


def served_name(argv: Sequence[str], default: str) -> str:
    """The name the engine serves under (its argv's, else `default`)."""
    args, _ = read_process(argv)
    return args.served_model_names[0] if args.served_model_names else default


def idle_metrics(argv: Sequence[str], name: str) -> str:
    """/metrics of an engine with no request running, under its own gauge's name."""
    _, engine = read_process(argv)
    gauge = (engine or vllm).METRICS.running[0]
    return f'{gauge}{{model_name="{name}"}} 0.0\n'
