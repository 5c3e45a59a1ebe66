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
"""

from __future__ import annotations

import dataclasses
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
from . import failures, stamped
from . import startlog as log
from .args import ArgError, ServerArgs, drafts, drafts_mtp, parse_args
from .gguf import GgufError, GgufFile, read_gguf
from .layout import (
    Device,
    Layout,
    first_shortfall,
    n_vocab,
    nextn_layers,
    plan_layout,
    plan_mtp_layout,
)
from .server import Handler, LlamaState

PROGRAM = "/app/llama-server"
REQUIRED = ("context_length", "embedding_length", "block_count", "attention.head_count")


def program() -> str:
    """The executable's path, as nvidia-smi names the process: /app/llama-server in the
    images, FLEET_LAB_LLAMACPP_PROGRAM where installed elsewhere (a systemd host)."""
    return os.environ.get("FLEET_LAB_LLAMACPP_PROGRAM", PROGRAM)


class LoadFailed(Exception):
    """The model did not load; the lines are printed, the server exits 1."""


VERBOSITY = [3]  # -lv: b11434 shows the library's lines (loader, buffers) only at 4


def emit_all(lines: list[str], detail: bool = False) -> None:
    """Print log lines; `detail` ones (the library's) only where the build shows them."""
    if detail and log.STAMPED and VERBOSITY[0] < 4:
        return
    for line in lines:
        log.emit(line)


def emit_pairs(pairs: list[tuple[str, bool]]) -> None:
    """Print (line, detail) pairs."""
    for line, detail in pairs:
        emit_all([line], detail)


def devices_now(cuda: bool, held: dict[str, int] | None = None) -> list[Device]:
    """The GPUs this process may use and what is free on them (minus `held` by itself)."""
    if not cuda:
        return []
    out = []
    for position, card in enumerate(gpumod.visible_gpus()):
        free = card.total_bytes - gpumod.used_by_others(card)
        free -= (held or {}).get(f"CUDA{position}", 0)
        out.append(Device(position, card, free))
    return out


def open_model(path: str) -> GgufFile:
    """The model's header, or LoadFailed after llama.cpp's failure lines."""
    if os.environ.get("FLEET_LAB_FAIL", "") in ("1", "crash"):
        emit_all(
            failures.failure_lines(
                path,
                "tensor 'blk.0.attn_q.weight' data is not within "
                "the file bounds, model is corrupted or incomplete",
                True,
            )
        )
        raise LoadFailed
    try:
        gguf = read_gguf(Path(path))
    except GgufError as err:
        emit_all(failures.failure_lines(path, err.message, err.by_loader))
        raise LoadFailed from err
    for key in REQUIRED:
        if gguf.hparam(key) is None:
            message = (
                f"error loading model hyperparameters: key not found in model: {gguf.arch}.{key}"
            )
            emit_all(failures.failure_lines(path, message, True))
            raise LoadFailed
    return gguf


def load_one(
    path: str, args: ServerArgs, ngl: int, devices: list[Device], n_seq: int, seconds: float
) -> tuple[GgufFile, Layout]:
    """Read, place and 'allocate' one model (target or draft), printing its lines."""
    gguf = open_model(path)
    lay = plan_layout(gguf, args, ngl, devices, n_seq)
    first = next(iter(lay.gpus.values()), None)
    emit_all(log.loader_lines(gguf, first) + log.print_info_lines(gguf, n_vocab(gguf)), True)
    emit_all(log.tensor_lines(lay, not args.no_mmap, bool(devices)), True)
    short = first_shortfall(lay)
    if short and short[0] == "model":
        emit_all(failures.shortfall_lines(path, *short))
        raise LoadFailed
    time.sleep(seconds)
    train = int(gguf.hparam("context_length"))
    freq_base = float(gguf.hparam("rope.freq_base", 10000.0))
    emit_all(log.context_lines(lay, args, train, freq_base), True)
    if short:
        emit_all(failures.shortfall_lines(path, *short))
        raise LoadFailed
    return gguf, lay


def load(args: ServerArgs, cuda: bool) -> tuple[GgufFile, Layout, Layout | None]:
    """The target model, then the draft model if there is one."""
    log.emit(log.srv("load_model", f"loading model '{args.model}'"))
    if drafts_mtp(args) and not args.model_draft and not has_mtp(args.model):
        log.emit(
            "operator(): failed to measure the memory of the extra model, fitting without "
            "it: failed to create llama_context from model",
            "W",
        )
    seconds = env_float("FLEET_LAB_LOAD_SECONDS", 0.3)
    gguf, lay = load_one(
        args.model, args, args.n_gpu_layers, devices_now(cuda), args.parallel, seconds
    )
    warmup = "warming up the model with an empty run - please wait ... (--no-warmup to disable)"
    if log.STAMPED:
        log.emit(f"cmn          init: llama threadpool init, n_threads = {args.threads}")
        emit_all([f"cmn  common_init_: {warmup}"], True)
    else:
        log.emit(f"common_init_from_params: {warmup}")
    draft = None
    if args.model_draft:
        draft = load_draft(args, cuda, lay)
    elif drafts_mtp(args):
        draft = load_mtp(args, gguf, lay)
    return gguf, lay, draft


def has_mtp(path: str) -> bool:
    """Whether the model file has MTP blocks (b11434's parameter fitting measures the MTP
    context first and warns when it cannot be made)."""
    try:
        return nextn_layers(read_gguf(Path(path))) > 0
    except GgufError:
        return True  # the loader reports the file itself


def load_mtp(args: ServerArgs, gguf: GgufFile, lay: Layout) -> Layout:
    """`--spec-type draft-mtp`: a draft context against the target's own MTP blocks, or
    b11434's failure when the model has none."""
    log.emit(
        "common_speculative_init_result: creating MTP draft context against the target "
        f"model '{args.model}'"
    )
    if not nextn_layers(gguf):
        log.emit(
            "llama_init_from_model: context type MTP requested but model doesn't contain "
            "MTP layers",
            "W",
        )
        log.emit("common_speculative_init_result: failed to create MTP context", "E")
        log.emit(log.srv("load_model", "failed to create MTP context"), "E")
        log.emit(log.srv("operator()", "operator(): cleaning up before exit..."))
        log.emit("srv  llama_server: exiting due to model loading error", "E")
        raise LoadFailed
    mtp = plan_mtp_layout(gguf, args, lay)
    train = int(gguf.hparam("context_length"))
    freq_base = float(gguf.hparam("rope.freq_base", 10000.0))
    emit_all(log.context_lines(mtp, args, train, freq_base), True)
    return mtp


def load_draft(args: ServerArgs, cuda: bool, lay: Layout) -> Layout:
    """The draft model: b11434 gives it the target's context and slots, older builds one
    sequence of the target's slot context."""
    path = str(args.model_draft)
    ngl = args.n_gpu_layers if args.n_gpu_layers_draft is None else args.n_gpu_layers_draft
    held = {name: lay.gpu_bytes(name) for name in lay.gpus}
    if log.STAMPED:
        log.emit(f"common_speculative_init_result: loading draft model '{path}'")
        dargs = dataclasses.replace(args, ctx_size=args.ctx_size_draft or lay.n_ctx)
        return load_one(path, dargs, ngl, devices_now(cuda, held), args.parallel, 0.0)[1]
    log.emit(log.srv("load_model", f"loading draft model '{path}'"))
    dargs = dataclasses.replace(args, ctx_size=args.ctx_size_draft or lay.n_ctx_seq)
    draft = load_one(path, dargs, ngl, devices_now(cuda, held), 1, 0.0)[1]
    if not drafts(args):
        log.emit("spec common_specu: no implementations specified for speculative decoding")
    return draft


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
