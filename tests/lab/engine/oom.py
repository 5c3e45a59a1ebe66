"""The out-of-memory switch: a deep prompt kills the engine the way vLLM V1 dies.

FLEET_LAB_OOM_AT_TOKENS=N: a request whose prompt has N or more tokens makes the
EngineCore child print what vLLM prints when a step runs out of memory (the input dump,
`EngineCore encountered a fatal error.` and a traceback ending in torch's
`torch.OutOfMemoryError: CUDA out of memory. Tried to allocate ...`), free its GPU memory
and exit 1. The API server then logs `AsyncLLM output_handler failed.` ending in
`EngineDeadError`, answers the request 500 (a stream: an error event, as its 200 headers
are already out), answers /health 503 and, FLEET_LAB_DEATH_SECONDS later (default 1),
shuts uvicorn down and exits 1. Line shapes follow real V1 logs of runtime OOMs.
"""

from __future__ import annotations

import os
import sys
import uuid
from pathlib import Path
from typing import Any

from . import gpu as gpumod
from .logfmt import Log
from .memory import MemoryPlan
from .payloads import ENGINE_DEAD

GiB, MiB, KiB = 1 << 30, 1 << 20, 1 << 10
SITE = "/usr/local/lib/python3.12/dist-packages"
MIN_ALLOCATION = 20 * MiB
CORE_FRAMES = (
    ("vllm/v1/engine/core.py", 1001, "run_engine_core", "engine_core.run_busy_loop()"),
    ("vllm/v1/engine/core.py", 1028, "run_busy_loop", "self._process_engine_step()"),
    (
        "vllm/v1/engine/core.py",
        1061,
        "_process_engine_step",
        "outputs, model_executed = self.step_fn()",
    ),
    (
        "vllm/v1/engine/core.py",
        389,
        "step",
        "model_output = self.model_executor.execute_model(scheduler_output)",
    ),
    (
        "vllm/v1/worker/gpu_model_runner.py",
        2941,
        "execute_model",
        "model_output = self._model_forward(",
    ),
)
HANDLER_FRAMES = (
    (
        "vllm/v1/engine/async_llm.py",
        655,
        "output_handler",
        "outputs = await engine_core.get_output_async()",
    ),
    (
        "vllm/v1/engine/core_client.py",
        896,
        "get_output_async",
        "raise self._format_exception(outputs) from None",
    ),
)


def torch_size(nbytes: float) -> str:
    """torch's CUDACachingAllocator format_size: KiB up to 1 MiB, MiB up to 1 GiB, GiB."""
    if nbytes <= MiB:
        return f"{nbytes / KiB:.2f} KiB"
    if nbytes <= GiB:
        return f"{nbytes / MiB:.2f} MiB"
    return f"{nbytes / GiB:.2f} GiB"


def oom_message(rank: int, want: int, total: int, free: int, held: int) -> str:
    """torch.OutOfMemoryError as recent torch words it."""
    return (
        f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {torch_size(want)}. "
        f"GPU {rank} has a total capacity of {torch_size(total)} of which {torch_size(free)} "
        f"is free. Including non-PyTorch memory, this process has {torch_size(held)} memory "
        f"in use. Of the allocated memory {torch_size(held - 256 * MiB)} is allocated by "
        f"PyTorch, and {torch_size(38 * MiB)} is reserved by PyTorch but unallocated. If "
        "reserved but unallocated memory is large try setting "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
        "documentation for Memory Management  (https://docs.pytorch.org/docs/stable/notes/"
        "cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)"
    )


def traceback_lines(frames: tuple[tuple[str, int, str, str], ...], last: str) -> list[str]:
    """A Python traceback over `frames`, ending in the exception line `last`."""
    out = ["Traceback (most recent call last):"]
    for path, line, func, code in frames:
        out += [f'  File "{SITE}/{path}", line {line}, in {func}', f"    {code}"]
    return [*out, last]


def scheduler_dump(prompt: int) -> str:
    """The scheduler-output dump of a one-request prefill step."""
    rid = f"chatcmpl-{uuid.uuid4().hex}"
    return (
        "Dumping scheduler output for model execution: SchedulerOutput(scheduled_new_reqs="
        f"[NewRequestData(req_id={rid},prompt_token_ids_len={prompt},mm_features=[],"
        "sampling_params=SamplingParams(n=1, temperature=1.0, top_p=1.0),"
        f"block_ids=([1, 2, 3],),num_computed_tokens=0,lora_request=None)],"
        f"scheduled_cached_reqs=CachedRequestData(req_ids=[], new_block_ids=[]), "
        f"num_scheduled_tokens={{{rid}: {prompt}}}, total_num_scheduled_tokens={prompt}, "
        "scheduled_spec_decode_tokens={}, finished_req_ids=[], grammar_bitmask=null)"
    )


def die_of_oom(
    cfg: dict[str, Any], log: Log, plan: MemoryPlan, paths: list[Path], prompt: int, init: str
) -> None:
    """In the EngineCore child: print the runtime OOM, free the GPU, exit 1.

    `init` is the engine-config line of start-up, whose config vLLM dumps again.
    """
    gpus = gpumod.visible_gpus()
    total = gpus[0].total_bytes if gpus else plan.total_bytes
    held = plan.total_bytes
    want = max(prompt * plan.bytes_per_token, MIN_ALLOCATION)
    free = max(min(total - held - (gpumod.used_by_others(gpus[0]) if gpus else 0), want // 4), 0)
    config = init.split(" with config: ", 1)[-1]
    log.error(
        "dump", f"Dumping input data for V1 LLM engine (v{cfg['version']}) with config: {config}"
    )
    log.error("dump_sched", scheduler_dump(prompt))
    fatal = traceback_lines(CORE_FRAMES, oom_message(0, want, total, free, held))
    log.error("fatal", "\n".join(["EngineCore encountered a fatal error.", *fatal]))
    gpumod.release_usage(paths)
    sys.stdout.flush()
    os._exit(1)


def engine_dead_lines(log: Log) -> None:
    """In the API server: the output handler's failure once the engine is gone."""
    last = f"vllm.v1.engine.exceptions.EngineDeadError: {ENGINE_DEAD}"
    lines = traceback_lines(HANDLER_FRAMES, last)
    log.error("handler", "\n".join(["AsyncLLM output_handler failed.", *lines]))


def stream_error_lines(log: Log) -> None:
    """In the API server: a streaming request that the dead engine failed."""
    lines = traceback_lines(
        HANDLER_FRAMES[:1], f"vllm.v1.engine.exceptions.EngineDeadError: {ENGINE_DEAD}"
    )
    log.error("stream_error", "\n".join(["Error in chat completion stream generator.", *lines]))


def uvicorn_shutdown(log: Log) -> None:
    """What uvicorn prints when vLLM tells it to exit after the engine died."""
    for line in (
        "Shutting down",
        "Waiting for application shutdown.",
        "Application shutdown complete.",
        f"Finished server process [{os.getpid()}]",
    ):
        log.raw(f"INFO:     {line}")
