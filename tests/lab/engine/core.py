"""The engine child processes: EngineCore and, with tensor parallelism, its workers.

Like vLLM, the API server process does not hold the GPU: it starts an EngineCore child,
which (tp=1) loads the model itself or (tp>1) starts one worker per GPU. The process
that "holds" a GPU records its memory with gpu.record_usage, so nvidia-smi lists that
child's pid, not the container's main pid. Each child reports one JSON line on the
fd in FLEET_LAB_RESULT_FD and then lives until its stdin (the lifeline) closes,
reading commands from it meanwhile (the OOM switch, oom.py).
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import gpu as gpumod
from . import memory
from .logfmt import Log, kv_available_message, kv_reserved_message, series, weights_message
from .modelinfo import load_shape, weight_files, weights_bytes

TRACE_HEAD = (
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py", '
    "line 691, in run_engine_core\n"
    "    engine_core = EngineCoreProc(*args, **kwargs)\n"
)


class EngineFailure(Exception):
    """A start-up failure; the message is the exception line vLLM prints."""


def set_process_name(name: str) -> None:
    """Set the kernel's process name (what `ps -o comm` shows), as setproctitle does."""
    try:
        libc = ctypes.CDLL(None)
        libc.prctl(15, name.encode()[:15], 0, 0, 0)  # PR_SET_NAME
    except (OSError, AttributeError):
        pass


def gib2(nbytes: float) -> str:
    """Two-decimal GiB, as torch's error messages print it."""
    return f"{nbytes / memory.GiB:.2f}"


def oom(gpu: gpumod.Gpu, rank: int, want: int, free: int, held: int) -> EngineFailure:
    """torch's CUDA out-of-memory error text."""
    return EngineFailure(
        f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {gib2(want)} GiB. "
        f"GPU {rank} has a total capacity of {gib2(gpu.total_bytes)} GiB of which "
        f"{gib2(max(free - held, 0))} GiB is free. Including non-PyTorch memory, this process "
        f"has {gib2(held)} GiB memory in use. Of the allocated memory {gib2(held)} GiB is "
        "allocated by PyTorch, and 0.00 GiB is reserved by PyTorch but unallocated. If "
        "reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."
    )


def check_start_memory(cfg: dict[str, Any], gpu: gpumod.Gpu, rank: int, free: int) -> None:
    """vLLM's start-up check of the utilization fraction against free memory."""
    util = cfg["gpu_memory_utilization"]
    if cfg["kv_cache_memory_bytes"] is not None:
        return
    util = memory.DEFAULT_UTILIZATION if util is None else util
    if free < util * gpu.total_bytes:
        raise EngineFailure(
            f"ValueError: Free memory on device cuda:{rank} ({gib2(free)}/"
            f"{gib2(gpu.total_bytes)} GiB) on startup is less than desired GPU memory "
            f"utilization ({util}, {gib2(util * gpu.total_bytes)} GiB). Decrease GPU memory "
            "utilization or reduce GPU memory used by other processes."
        )


def plan_for(cfg: dict[str, Any], gpu: gpumod.Gpu) -> memory.MemoryPlan:
    """The memory plan of this engine on one of its GPUs."""
    model_dir = Path(cfg["model"])
    return memory.plan_memory(
        load_shape(model_dir),
        weights_bytes(model_dir),
        cfg["tensor_parallel_size"],
        gpu.total_bytes,
        cfg["gpu_memory_utilization"],
        cfg["kv_cache_memory_bytes"],
        cfg["kv_cache_dtype"],
        cfg["max_model_len"],
        cfg.get("speculative"),
    )


def load_weights(cfg: dict[str, Any], log: Log, plan: memory.MemoryPlan) -> None:
    """Print the weight-loading lines and take the configured (short) time."""
    shards = max(len(weight_files(Path(cfg["model"]))), 1)
    log.info("load", f"Starting to load model {cfg['model']}...")
    log.raw(f"Loading safetensors checkpoint shards:   0% Completed | 0/{shards} [00:00<?, ?it/s]")
    started = time.monotonic()
    time.sleep(float(os.environ.get("FLEET_LAB_LOAD_SECONDS", "0.3")))
    log.raw(
        f"Loading safetensors checkpoint shards: 100% Completed | {shards}/{shards} "
        f"[00:00<00:00, {shards / 0.3:.2f}it/s]"
    )
    log.raw("")
    seconds = time.monotonic() - started
    log.info("loaded", f"Loading weights took {seconds:.2f} seconds")
    log.info("weights", weights_message(cfg["version"], plan.weights_bytes, seconds + 0.1))


def allocate(cfg: dict[str, Any], log: Log, rank: int, gpu: gpumod.Gpu) -> memory.MemoryPlan:
    """Load weights and carve the KV cache on one GPU, failing as vLLM/torch would."""
    plan = plan_for(cfg, gpu)
    free = gpu.total_bytes - gpumod.used_by_others(gpu)
    check_start_memory(cfg, gpu, rank, free)
    static = plan.weights_bytes + plan.overhead_bytes
    if static > free:
        raise oom(gpu, rank, static - plan.overhead_bytes, free, plan.overhead_bytes)
    load_weights(cfg, log, plan)
    if cfg["kv_cache_memory_bytes"] is not None:
        if static + plan.kv_bytes > free:
            raise oom(gpu, rank, plan.kv_bytes, free, static)
        log.info("reserved", kv_reserved_message(cfg["version"], free, plan.kv_bytes))
    elif plan.kv_bytes <= 0:
        raise EngineFailure(
            "ValueError: No available memory for the cache blocks. Try "
            "increasing `gpu_memory_utilization` when initializing the engine."
        )
    else:
        log.info("kv", kv_available_message(cfg["version"], plan.kv_bytes))
    return plan


def kv_too_small(cfg: dict[str, Any], plan: memory.MemoryPlan) -> EngineFailure:
    """vLLM's error when one request of max_model_len does not fit the KV cache."""
    need = plan.request_bytes
    old = series(cfg["version"]) != "0.18"
    model_s, open_p = ("models's", "(") if old else ("model's", "")
    fmt = (lambda b: f"{b / memory.GiB:.2f}") if old else (lambda b: f"{round(b / memory.GiB, 2)}")
    return EngineFailure(
        f"ValueError: To serve at least one request with the {model_s} max seq len "
        f"({plan.max_model_len}), {open_p}{fmt(need)} GiB KV cache is needed, which is larger "
        f"than the available KV cache memory ({fmt(max(plan.kv_bytes, 0))} GiB). Based on the "
        f"available memory, the estimated maximum model length is {plan.kv_tokens}. Try "
        "increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing "
        "the engine."
    )


def report(result: dict[str, Any]) -> None:
    """Send this child's one-line result to its parent."""
    fd = int(os.environ["FLEET_LAB_RESULT_FD"])
    os.write(fd, (json.dumps(result) + "\n").encode())
    os.close(fd)


def hold_until_parent_exits(
    paths: list[Path], on_command: Callable[[str, str], None] | None = None
) -> None:
    """Keep the 'GPU memory' until the parent closes our stdin, then free it.

    Lines the parent writes meanwhile are commands (`<name> <argument>`), handed to
    `on_command` (lifeline.py writes them).
    """
    try:
        for line in sys.stdin.buffer:
            name, _, argument = line.decode(errors="replace").strip().partition(" ")
            if name and on_command is not None:
                on_command(name, argument)
    finally:
        gpumod.release_usage(paths)


def spawn(name: str, module: str, env: dict[str, str]) -> tuple[subprocess.Popen[bytes], int]:
    """Start a child python process titled `name`; returns it and its result fd."""
    read_fd, write_fd = os.pipe()
    child_env = {**os.environ, **env, "FLEET_LAB_RESULT_FD": str(write_fd)}
    # a title for argv[0] leaves Python no path to find its prefix by: on a merged-/usr
    # host (a systemd lab host) it then misses dist-packages, where this package lives
    site = str(Path(__file__).resolve().parent.parent)
    child_env["PYTHONPATH"] = os.pathsep.join(p for p in (site, os.environ.get("PYTHONPATH")) if p)
    python = sys.executable or os.readlink("/proc/self/exe")  # '' under a VLLM:: title
    proc = subprocess.Popen(
        [name, "-m", module],
        executable=python,
        env=child_env,
        stdin=subprocess.PIPE,
        pass_fds=(write_fd,),
    )
    os.close(write_fd)
    return proc, read_fd


def read_result(read_fd: int) -> dict[str, Any]:
    """The child's JSON result line ({} when it died without one)."""
    with os.fdopen(read_fd, "rb") as pipe:
        line = pipe.readline()
    return json.loads(line) if line else {}


def title(cfg: dict[str, Any], base: str) -> str:
    """Process title: recent vLLM sets `VLLM::<role>`, 0.9 leaves `python3`."""
    return "python3" if series(cfg["version"]) == "0.9" else f"VLLM::{base}"
