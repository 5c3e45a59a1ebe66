"""`python3 -m sglang.launch_server ...`: the SGLang stand-in's launcher.

Reads SGLang's flags (unknown ones are tolerated, as the stand-ins do), logs
`server_args={...}`, checks the model directory and the context length, starts one
scheduler child per tensor-parallel rank and, once every rank has its KV pool, serves
HTTP (server.py) until it is stopped. Fails with SGLang's messages, exit 1.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from ..core import read_result, spawn
from ..modelinfo import ModelError, load_shape
from . import startlog
from .server import serve_forever

VERSION = os.environ.get("FLEET_LAB_SGLANG_VERSION", "0.5.23")


def parse(argv: list[str]) -> argparse.Namespace:
    """The flags the stand-in acts on (SGLang's spellings); others are ignored."""
    parser = argparse.ArgumentParser(prog="launch_server.py", allow_abbrev=False)
    parser.add_argument("--model-path", "--model", dest="model_path", required=True)
    parser.add_argument("--served-model-name", default=None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=30000)
    parser.add_argument("--context-length", type=int, default=None)
    parser.add_argument("--mem-fraction-static", type=float, default=None)
    parser.add_argument("--tp-size", "--tensor-parallel-size", dest="tp_size", type=int, default=1)
    parser.add_argument("--kv-cache-dtype", default="auto")
    parser.add_argument("--max-running-requests", type=int, default=None)
    parser.add_argument("--enable-metrics", action="store_true")
    parser.add_argument("--speculative-algorithm", default=None)
    parser.add_argument("--speculative-num-steps", type=int, default=None)
    parser.add_argument("--speculative-eagle-topk", type=int, default=None)
    parser.add_argument("--speculative-num-draft-tokens", type=int, default=None)
    parser.add_argument("--speculative-draft-model-path", default=None)
    args, _ = parser.parse_known_args(argv)
    return args


def settings(args: argparse.Namespace) -> dict[str, Any]:
    """What `server_args={...}` shows: the resolved values fleet reads back."""
    return {
        "model_path": args.model_path,
        "served_model_name": args.served_model_name or args.model_path,
        "host": args.host,
        "port": args.port,
        "context_length": args.context_length,
        "mem_fraction_static": args.mem_fraction_static,
        "tp_size": args.tp_size,
        "kv_cache_dtype": args.kv_cache_dtype,
        "enable_metrics": args.enable_metrics,
        "speculative_algorithm": args.speculative_algorithm,
        "speculative_num_steps": args.speculative_num_steps,
        "speculative_draft_model_path": args.speculative_draft_model_path,
    }


def fail(message: str) -> int:
    startlog.raw("Traceback (most recent call last):")
    startlog.raw(message)
    return 1


def start_ranks(cfg: dict[str, Any]) -> tuple[list[Any], list[dict[str, Any]]]:
    """One scheduler child per rank, and what each reported."""
    children = []
    env = {"FLEET_LAB_ENGINE_CFG": json.dumps(cfg)}
    for rank in range(cfg["tp"]):
        name = f"sglang::scheduler_TP{rank}"
        children.append(spawn(name, "vllm.sglang.scheduler", {**env, "FLEET_LAB_RANK": str(rank)}))
    return [proc for proc, _ in children], [read_result(fd) for _, fd in children]


def main() -> int:
    """Launch: settings, model, ranks, then serve."""
    args = parse(sys.argv[1:])
    startlog.line(startlog.server_args(settings(args)))
    try:
        shape = load_shape(Path(args.model_path))
    except ModelError:
        return fail(f"OSError: Can't load the configuration of '{args.model_path}'.")
    context = args.context_length or shape.max_position_embeddings
    allow = os.environ.get("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN") == "1"
    if context > shape.max_position_embeddings and not allow:
        return fail(startlog.context_too_long(context, shape.max_position_embeddings))
    spec = None
    if args.speculative_algorithm:
        spec = {
            "method": args.speculative_algorithm,
            "num_speculative_tokens": args.speculative_num_steps or 1,
        }
    dtype = shape.dtype if args.kv_cache_dtype == "auto" else args.kv_cache_dtype
    cfg = {
        "model": args.model_path,
        "tp": args.tp_size,
        "fraction": args.mem_fraction_static,
        "kv_cache_dtype": args.kv_cache_dtype,
        "dtype": dtype,
        "context": context,
        "running": args.max_running_requests or 64,
    }
    children, results = start_ranks(cfg)
    if not all(result.get("ok") for result in results):
        for child in children:
            child.kill()
        return 1
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    state = {
        "version": VERSION,
        "model": args.model_path,
        "served_names": [args.served_model_name or args.model_path],
        "max_model_len": context,
        "max_num_seqs": cfg["running"],
        "kv_tokens": results[0].get("kv_tokens"),
        "speculative": spec,
        "fail": os.environ.get("FLEET_LAB_FAIL", ""),
        "metrics": args.enable_metrics,
    }
    serve_forever(state, args.host, args.port)
    return 0
