"""Loading the model (and its drafter): what llama-server prints and 'allocates' from
`srv load_model: loading model` to the draft or MTP context, and how it fails.

Called by `main`: `load` reads the target's GGUF header, places its buffers
(`layout.plan_layout`) and prints the library's lines (loader, print_info, tensors, the
context's caches: shown by b11434 only at `-lv 4`, `VERBOSITY`), then loads the draft
model, or with `--spec-type draft-mtp` creates the MTP draft context against the target
(failing as b11434 does when the model has no MTP blocks). A failure prints llama.cpp's
lines and raises LoadFailed.
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

from .. import gpu as gpumod
from ..scheduler import env_float
from . import failures
from . import startlog as log
from .args import ServerArgs, drafts, drafts_mtp
from .contextlog import context_lines
from .gguf import GgufError, GgufFile, read_gguf
from .hparams import nextn_layers
from .layout import Device, Layout, first_shortfall, n_vocab, plan_layout, plan_mtp_layout

REQUIRED = ("context_length", "embedding_length", "block_count", "attention.head_count")


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
    path: str,
    args: ServerArgs,
    ngl: int,
    devices: list[Device],
    n_seq: int,
    seconds: float,
    rs_seq: int = 0,
) -> tuple[GgufFile, Layout]:
    """Read, place and 'allocate' one model (target or draft), printing its lines."""
    gguf = open_model(path)
    lay = plan_layout(gguf, args, ngl, devices, n_seq, rs_seq)
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
    emit_all(context_lines(lay, args, train, freq_base), True)
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
    # b11434 keeps rollback snapshots of a recurrent state for an MTP draft's tokens
    # (common_params_speculative::need_n_rs_seq)
    rs_seq = args.draft_max if drafts_mtp(args) and not args.model_draft else 0
    gguf, lay = load_one(
        args.model, args, args.n_gpu_layers, devices_now(cuda), args.parallel, seconds, rs_seq
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
    emit_all(context_lines(mtp, args, train, freq_base), True)
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
