"""`/app/llama-server ...`: parse, bind, load the model (503 meanwhile), serve, stop.

As llama-server does, the HTTP port is bound before the model loads, so /health answers
503 `Loading model` for FLEET_LAB_LOAD_SECONDS (default 0.3) and 200 afterwards. The
image's build flavour comes from FLEET_LAB_LLAMACPP_BACKEND (`cuda` for the server-cuda
images, else `cpu`): a CUDA build with GPUs handed over (FLEET_LAB_GPUS) and -ngl > 0
puts layers on them and records model, KV and compute memory for nvidia-smi; a CPU build,
or no GPU, keeps everything on the CPU and records nothing. Failures print llama.cpp's
lines and exit 1: a file that is no GGUF, missing hyper-parameters, a buffer that does
not fit its GPU, FLEET_LAB_FAIL=1 (or crash: a corrupted model file).
FLEET_LAB_FAIL=never-healthy keeps loading forever; crash-after=N aborts N s after ready.
The loading itself (target, draft model, MTP context) is `loading`.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from .. import gpu as gpumod
from ..core import set_process_name
from ..httpbase import make_server
from ..scheduler import Scheduler, env_float
from . import stamped
from . import startlog as log
from .args import ArgError, ServerArgs, drafts, drafts_mtp, parse_args
from .gguf import GgufFile
from .layout import Layout, n_vocab
from .loading import VERBOSITY, LoadFailed, devices_now, emit_all, emit_pairs, load
from .server import Handler, LlamaState

PROGRAM = "/app/llama-server"


def program() -> str:
    """The executable's path, as nvidia-smi names the process: /app/llama-server in the
    images, FLEET_LAB_LLAMACPP_PROGRAM where installed elsewhere (a systemd host)."""
    return os.environ.get("FLEET_LAB_LLAMACPP_PROGRAM", PROGRAM)


def record_gpus(lay: Layout, draft: Layout | None) -> list[Path]:
    """Register what this process holds on each GPU (nvidia-smi lists it)."""
    paths = []
    for name, device in {**lay.gpus, **(draft.gpus if draft else {})}.items():
        held = lay.gpu_bytes(name) + (draft.gpu_bytes(name) if draft else 0)
        paths.append(gpumod.record_usage(device.gpu, held, program()))
    return paths


def model_info(
    args: ServerArgs, gguf: GgufFile, lay: Layout, draft: Layout | None
) -> dict[str, Any]:
    """What the HTTP side needs to know about the loaded model."""
    meta = {
        "vocab_type": 2,
        "n_vocab": n_vocab(gguf),
        "n_ctx_train": gguf.hparam("context_length"),
        "n_embd": gguf.hparam("embedding_length"),
        "n_params": sum(t.elements for t in gguf.tensors),
        "size": sum(t.nbytes for t in gguf.tensors),
    }
    return {
        "alias": args.alias,
        "model_path": args.model,
        "model_id": args.alias or args.model,
        "n_ctx_slot": lay.n_ctx_seq,
        "slots": args.parallel,
        "draft": drafting_model(args) if draft else None,
        "draft_max": args.draft_max,
        "meta": meta,
        "metrics_endpoint": args.metrics,
        "slots_endpoint": args.slots,
    }


def drafting_model(args: ServerArgs) -> str | None:
    """The model that drafts: the draft model, the target itself with MTP, else None."""
    if drafts_mtp(args) and not args.model_draft:
        return args.model
    return args.model_draft if drafts(args) else None


def crash_later(paths: list[Path]) -> None:
    """FLEET_LAB_FAIL=crash-after=N: a CUDA error N seconds after becoming ready."""
    fail = os.environ.get("FLEET_LAB_FAIL", "")
    if not fail.startswith("crash-after="):
        return
    delay = float(fail.split("=", 1)[1])

    def die() -> None:
        time.sleep(delay)
        emit_all(
            [
                "/app/ggml/src/ggml-cuda/ggml-cuda.cu:88: CUDA error",
                "CUDA error: an illegal memory access was encountered",
                "  current device: 0, in function ggml_backend_cuda_synchronize at "
                "/app/ggml/src/ggml-cuda/ggml-cuda.cu:2659",
                "  cudaStreamSynchronize(cuda_ctx->stream())",
            ]
        )
        gpumod.release_usage(paths)
        os._exit(134)  # abort(): SIGABRT

    threading.Thread(target=die, daemon=True).start()


def ready_log(args: ServerArgs, gguf: GgufFile, lay: Layout, draft: Layout | None) -> None:
    """The lines from the slots (b11434) or the model being loaded (older) on."""
    if log.STAMPED:
        drafting = draft is not None and drafts(args)
        mtp = draft is not None and drafting_model(args) == args.model
        mtp_embd = int(gguf.hparam("embedding_length")) if mtp else 0
        emit_pairs(
            stamped.stamped_ready_lines(
                args, lay.n_ctx_seq, lay.n_stream == 1, drafting, mtp_embd=mtp_embd
            )
        )
    else:
        emit_all(log.ready_lines(args.host, args.port))


def main() -> int:
    """Run llama-server; returns its exit code."""
    set_process_name("llama-server")
    try:
        args = parse_args(sys.argv[1:])
    except ArgError as err:
        log.emit(str(err))
        return 1
    cuda = os.environ.get("FLEET_LAB_LLAMACPP_BACKEND", "cpu") == "cuda"
    devices = devices_now(cuda)
    VERBOSITY[0] = args.verbosity
    if log.STAMPED:
        for line in log.no_gpu_warnings(cuda, devices, args.n_gpu_layers != 0):
            sys.stderr.write(line + "\n")  # common/arg.cpp's fprintf: no timestamp
        emit_pairs(stamped.stamped_start_lines(args))
    else:
        emit_all(log.backend_lines(cuda, devices, args.n_gpu_layers != 0))
        emit_all(log.build_lines(args, cuda and bool(devices)))
    rate, prefill = (
        env_float("FLEET_LAB_TOKEN_RATE", 50.0),
        env_float("FLEET_LAB_PREFILL_RATE", 50_000.0),
    )
    sched = Scheduler(args.parallel, rate, prefill)
    state = LlamaState({}, sched, env_float("FLEET_LAB_SPEC_ACCEPTANCE", 0.7))
    try:
        httpd = make_server(args.host, args.port, type("Bound", (Handler,), {"state": state}))
    except OSError:
        log.emit(
            f"main: couldn't bind HTTP server socket, hostname: {args.host}, port: {args.port}"
        )
        return 1
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    try:
        gguf, lay, draft = load(args, cuda)
    except LoadFailed:
        return 1
    paths = record_gpus(lay, draft)
    sched.kv_tokens = lay.n_ctx
    state.info = model_info(args, gguf, lay, draft)
    if not log.STAMPED:
        emit_all(log.slot_lines(args.parallel, lay.n_ctx_seq))
        emit_all(
            [
                log.srv("load_model", "prompt cache is enabled, size limit: 8192 MiB"),
                log.srv("load_model", "use `--cache-ram 0` to disable the prompt cache"),
            ]
        )
    if os.environ.get("FLEET_LAB_FAIL") != "never-healthy":
        state.ready.set()
        ready_log(args, gguf, lay, draft)
    crash_later(paths)
    while not stop.wait(0.5):
        pass
    log.emit(log.srv("operator()", "operator(): cleaning up before exit..."))
    gpumod.release_usage(paths)
    return 0
