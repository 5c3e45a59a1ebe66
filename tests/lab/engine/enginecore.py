"""Entry points of the engine children: `python3 -m vllm.enginecore` / `vllm.worker`.

EngineCore prints the engine-config line, has each GPU's memory allocated (itself for
tp=1, by worker children for tp>1), prints the KV-cache size and concurrency, reports
to the API server and then holds its GPU memory until the API server goes away (or,
on the OOM switch's command, dies as vLLM's engine does: oom.py).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from . import gpu as gpumod
from .core import (
    TRACE_HEAD,
    EngineFailure,
    allocate,
    hold_until_parent_exits,
    kv_too_small,
    read_result,
    report,
    set_process_name,
    spawn,
    title,
)
from .logfmt import Log, series
from .memory import MemoryPlan
from .oom import die_of_oom

CRASH = "RuntimeError: CUDA error: an illegal memory access was encountered"


def load_cfg() -> dict[str, Any]:
    """The resolved engine settings the API server passed down."""
    return json.loads(os.environ["FLEET_LAB_ENGINE_CFG"])


def spec_repr(spec: dict[str, Any] | None) -> str:
    """`speculative_config=...` as the engine-config line prints it."""
    if not spec:
        return "None"
    model = spec.get("model")
    model_s = f"'{model}'" if model else "None"
    return (
        f"SpeculativeConfig(method='{spec.get('method')}', model={model_s}, "
        f"num_spec_tokens={spec.get('num_speculative_tokens')})"
    )


def engine_config_line(cfg: dict[str, Any]) -> str:
    """`Initializing a V1 LLM engine (vX) with config: ...`."""
    m = cfg["model"]
    return (
        f"Initializing a V1 LLM engine (v{cfg['version']}) with config: model='{m}', "
        f"speculative_config={spec_repr(cfg['speculative'])}, tokenizer='{m}', "
        "skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
        "tokenizer_revision=None, trust_remote_code=False, "
        f"dtype=torch.{cfg['dtype']}, max_seq_len={cfg['max_model_len']}, download_dir=None, "
        f"load_format=auto, tensor_parallel_size={cfg['tensor_parallel_size']}, "
        "pipeline_parallel_size=1, data_parallel_size=1, disable_custom_all_reduce=False, "
        f"quantization={cfg['quantization']}, enforce_eager={cfg['enforce_eager']}, "
        f"kv_cache_dtype={cfg['kv_cache_dtype']}, device_config=cuda, seed=0, "
        f"served_model_name={cfg['served_names'][0]}, enable_prefix_caching=True, "
        "enable_chunked_prefill=True, pooler_config=None"
    )


def plan_from(result: dict[str, Any]) -> MemoryPlan:
    """Rebuild a worker's MemoryPlan from its JSON result."""
    return MemoryPlan(**{k: result[k] for k in MemoryPlan.__dataclass_fields__})


def run_workers(cfg: dict[str, Any]) -> tuple[MemoryPlan, list[Any]]:
    """tp>1: one worker child per GPU; the first failure fails the engine."""
    children, results = [], []
    for rank in range(cfg["tensor_parallel_size"]):
        name = title(cfg, f"Worker_TP{rank}")
        children.append(spawn(name, "vllm.worker", {"FLEET_LAB_RANK": str(rank)}))
    for _proc, fd in children:
        results.append(read_result(fd))
    failed = [r for r in results if not r.get("ok")]
    if failed:
        raise EngineFailure(failed[0].get("error", "RuntimeError: worker died"))
    return plan_from(results[0]), [proc for proc, _ in children]


def run_ranks(cfg: dict[str, Any], log: Log) -> tuple[MemoryPlan, list[Path], list[Any]]:
    """Allocate on every GPU of the engine; returns the plan, usage files and workers."""
    gpus = gpumod.visible_gpus()
    tp = cfg["tensor_parallel_size"]
    if not gpus:
        raise EngineFailure("RuntimeError: Failed to infer device type")
    if tp > len(gpus):
        raise EngineFailure(
            f"ValueError: World size ({tp}) is larger than the number of "
            f"available GPUs ({len(gpus)}) in this node."
        )
    if tp > 1:
        plan, workers = run_workers(cfg)
        return plan, [], workers
    plan = allocate(cfg, log, 0, gpus[0])
    path = gpumod.record_usage(gpus[0], plan.total_bytes, title(cfg, "EngineCore"))
    return plan, [path], []


def print_capacity(cfg: dict[str, Any], log: Log, plan: MemoryPlan) -> None:
    """The KV-cache size and concurrency lines (printed once per worker by 0.9)."""
    times = cfg["tensor_parallel_size"] if series(cfg["version"]) == "0.9" else 1
    if plan.state_bytes:
        log.info(
            "blocksize",
            f"Setting attention block size to {plan.block_size} tokens to ensure that "
            "attention page size is >= mamba page size.",
        )
    if plan.state_bytes and plan.page_bytes > plan.state_bytes:
        pct = 100 * (plan.page_bytes - plan.state_bytes) / plan.state_bytes
        log.info(
            "padding",
            f"Padding mamba page size by {pct:.2f}% to ensure that mamba page size and "
            "attention page size are exactly equal.",
        )
    for _ in range(times):
        log.info("tokens", f"GPU KV cache size: {plan.kv_tokens:,} tokens")
        log.info(
            "concurrency",
            f"Maximum concurrency for {plan.max_model_len:,} tokens per "
            f"request: {plan.max_concurrency:.2f}x",
        )


def crash_later(cfg: dict[str, Any], log: Log) -> None:
    """FLEET_LAB_FAIL=crash-after=N: the engine dies N seconds after becoming ready."""
    fail = cfg.get("fail", "")
    if not fail.startswith("crash-after="):
        return
    delay = float(fail.split("=", 1)[1])

    def die() -> None:
        time.sleep(delay)
        log.error("error", "EngineCore encountered a fatal error.\n" + TRACE_HEAD + CRASH)
        os._exit(1)

    threading.Thread(target=die, daemon=True).start()


def core_main() -> int:
    """EngineCore: allocate, report, then hold the GPU until the API server exits."""
    cfg = load_cfg()
    log = Log(cfg["version"], "core", os.getpid())
    set_process_name(title(cfg, "EngineCore"))
    paths: list[Path] = []
    started = time.monotonic()
    try:
        log.info("init", engine_config_line(cfg))
        if cfg.get("fail") == "crash":
            raise EngineFailure(CRASH)
        plan, paths, _workers = run_ranks(cfg, log)
        if plan.num_blocks < plan.request_blocks:
            raise kv_too_small(cfg, plan)
        print_capacity(cfg, log, plan)
        took = time.monotonic() - started
        log.info(
            "took", f"init engine (profile, create kv cache, warmup model) took {took:.2f} seconds"
        )
    except EngineFailure as err:
        log.error("error", "EngineCore failed to start.\n" + TRACE_HEAD + str(err))
        gpumod.release_usage(paths)
        report({"ok": False, "error": str(err)})
        return 1
    report(
        {
            "ok": True,
            "kv_tokens": plan.kv_tokens,
            "kv_bytes": plan.kv_bytes,
            "max_concurrency": plan.max_concurrency,
            "num_blocks": plan.num_blocks,
            "block_size": plan.block_size,
        }
    )
    crash_later(cfg, log)

    def command(name: str, argument: str) -> None:
        if name == "oom":
            die_of_oom(cfg, log, plan, paths, int(argument or 0), engine_config_line(cfg))

    hold_until_parent_exits(paths, command)
    return 0


def worker_main() -> int:
    """A tensor-parallel worker: allocate on GPU `rank`, report, hold."""
    cfg = load_cfg()
    rank = int(os.environ["FLEET_LAB_RANK"])
    log = Log(cfg["version"], "worker", os.getpid(), rank)
    set_process_name(title(cfg, f"Worker_TP{rank}"))
    gpu = gpumod.visible_gpus()[rank]
    try:
        plan = allocate(cfg, log, rank, gpu)
    except EngineFailure as err:
        log.error("error", str(err))
        report({"ok": False, "error": str(err)})
        return 1
    path = gpumod.record_usage(gpu, plan.total_bytes, title(cfg, f"Worker_TP{rank}"))
    report({"ok": True, **{k: getattr(plan, k) for k in MemoryPlan.__dataclass_fields__}})
    hold_until_parent_exits([path])
    return 0


if __name__ == "__main__":
    sys.exit(core_main())
