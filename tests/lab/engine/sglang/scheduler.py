"""A scheduler child of the SGLang stand-in (`sglang::scheduler_TP<n>`): one GPU's memory.

Loads the "weights" and carves the KV pool on its rank's GPU as SGLang sizes them:
--mem-fraction-static x the GPU's memory holds weights and KV pool (the stand-in's
memory model, `vllm.memory`, with the fraction as the utilization); out of memory and a
fraction too small for any KV fail as SGLang does. Records what it holds for nvidia-smi,
reports to the launcher and holds until the launcher exits.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from .. import gpu as gpumod
from ..core import EngineFailure, hold_until_parent_exits, oom, report, set_process_name
from ..memory import DEFAULT_UTILIZATION, MemoryPlan, plan_memory
from ..modelinfo import load_shape, weights_bytes
from . import startlog


def plan_for(cfg: dict[str, Any], gpu: gpumod.Gpu) -> MemoryPlan:
    """This rank's memory: weights / tp, the KV pool the fraction leaves."""
    model = Path(cfg["model"])
    return plan_memory(
        load_shape(model),
        weights_bytes(model),
        cfg["tp"],
        gpu.total_bytes,
        cfg["fraction"] if cfg["fraction"] is not None else DEFAULT_UTILIZATION,
        None,
        cfg["kv_cache_dtype"],
        cfg["context"],
    )


def allocate(cfg: dict[str, Any], rank: int, gpu: gpumod.Gpu) -> MemoryPlan:
    """Weights, then the KV pool, failing as SGLang (and torch) would."""
    plan = plan_for(cfg, gpu)
    free = gpu.total_bytes - gpumod.used_by_others(gpu)
    static = plan.weights_bytes + plan.overhead_bytes
    if static > free:
        raise oom(gpu, rank, plan.weights_bytes, free, plan.overhead_bytes)
    time.sleep(float(os.environ.get("FLEET_LAB_LOAD_SECONDS", "0.3")))
    arch = load_shape(Path(cfg["model"])).architecture
    startlog.line(startlog.weights_end(arch, free - static, plan.weights_bytes), rank)
    if plan.kv_bytes <= 0 or plan.kv_tokens <= 0:
        raise EngineFailure(startlog.NOT_ENOUGH_MEMORY)
    if static + plan.kv_bytes > free:
        raise oom(gpu, rank, plan.kv_bytes, free, static)
    return plan


def main() -> int:
    """Allocate on GPU `rank`, log the KV pool, report, hold."""
    cfg = json.loads(os.environ["FLEET_LAB_ENGINE_CFG"])
    rank = int(os.environ["FLEET_LAB_RANK"])
    set_process_name(f"sglang::scheduler_TP{rank}")
    gpus = gpumod.visible_gpus()
    try:
        if len(gpus) <= rank:
            raise EngineFailure("RuntimeError: No CUDA GPUs are available")
        plan = allocate(cfg, rank, gpus[rank])
    except EngineFailure as err:
        startlog.raw("Traceback (most recent call last):")
        startlog.raw(str(err))
        report({"ok": False, "error": str(err)})
        return 1
    half = plan.kv_bytes // 2
    startlog.line(startlog.kv_allocated(cfg["dtype"], plan.kv_tokens, half, half), rank)
    path = gpumod.record_usage(gpus[rank], plan.total_bytes, f"sglang::scheduler_TP{rank}")
    if rank == 0:
        left = gpus[rank].total_bytes - gpumod.used_by_others(gpus[rank]) - plan.total_bytes
        startlog.line(startlog.capacity(plan.kv_tokens, cfg["running"], cfg["context"], left), 0)
    report({"ok": True, "kv_tokens": plan.kv_tokens})
    hold_until_parent_exits([path])
    return 0


if __name__ == "__main__":
    sys.exit(main())
