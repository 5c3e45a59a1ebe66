"""llama.cpp's llama-server: the argv fleet renders, reading it back, its log, its shape.

A llama.cpp seat sizes its KV cache by its context: `--ctx-size` is the whole cache
(`context` × `parallel` slots) and `--parallel` the number of slots, so each slot holds
`context` tokens and concurrency (KV cells / context) is the number of slots. There is no
KV byte budget or memory fraction to render. Speculative decoding drafts with a separate
GGUF model (`--model-draft`, `--draft-max k`). The startup log is read by
`fleet.facts.llamacpp_log` and reported in the engine-neutral `EngineReport`.
"""

from __future__ import annotations

from fleet.engines.base import Shape
from fleet.facts.argv import EngineArgs
from fleet.facts.llamacpp_log import LlamaCppReport, parse_llamacpp_log
from fleet.facts.vllm_log import EngineError, EngineReport, ErrorKind
from fleet.secrets import mask_argv
from fleet.spec.models import Seat

NAME: str = "llama.cpp"
COMPARED: tuple[str, ...] = (
    "model",
    "served_names",
    "port",
    "context",
    "parallel",
    "speculative",
    "extra_args",
)
ENTRYPOINT = "/app/llama-server"  # as the ggml-org/llama.cpp server images install it
ALL_LAYERS = "999"
# Switches fleet always renders, not compared (a hand-made server may lack them):
# --metrics serves the Prometheus /metrics the reconcile loop and fleet bench read.
RENDERED_SWITCHES = ("--metrics",)


def slots(seat: Seat) -> int:
    """Parallel slots of a seat (one when desired/ does not say)."""
    return seat.parallel or 1


def entrypoint(seat: Seat) -> list[str]:
    """llama-server, where the server images install it."""
    return [ENTRYPOINT]


def render_args(seat: Seat) -> list[str]:
    """The server's argv after its entrypoint, in a fixed order."""
    args = [
        "--model",
        seat.model,
        "--alias",
        seat.served_name,
        "--host",
        "0.0.0.0",
        "--port",
        str(seat.port),
        "--ctx-size",
        str(seat.context * slots(seat)),
        "--parallel",
        str(slots(seat)),
        "--n-gpu-layers",
        ALL_LAYERS if seat.gpus else "0",
        *RENDERED_SWITCHES,
    ]
    spec = seat.speculative
    if spec is not None and spec.draft_model:
        args += ["--model-draft", spec.draft_model, "--draft-max", str(spec.num_tokens)]
    return args + list(seat.extra_args)


def healthcheck(seat: Seat) -> list[str]:
    """The container's own probe: llama-server answers 503 while loading, 200 when ready."""
    return ["CMD", "curl", "-fsS", f"http://127.0.0.1:{seat.port}/health"]


def desired_shape(seat: Seat) -> Shape:
    """The fields plan compares, as desired/ says them."""
    spec = seat.speculative
    speculative = (
        {"model": spec.draft_model, "num_speculative_tokens": spec.num_tokens}
        if spec is not None and spec.draft_model
        else None
    )
    return {
        "model": seat.model,
        "served_names": [seat.served_name],
        "port": seat.port,
        "context": seat.context,
        "parallel": slots(seat),
        "speculative": speculative,
        "extra_args": list(mask_argv(seat.extra_args)),
    }


def observed_shape(args: EngineArgs) -> Shape:
    """The same fields, read off the live process's argv."""
    parallel = args.parallel_slots or 1
    speculative = None
    if args.draft_model:
        speculative = {"model": args.draft_model, "num_speculative_tokens": args.draft_max}
    return {
        "model": args.model,
        "served_names": sorted(args.served_model_names or ((args.model,) if args.model else ())),
        "port": args.port,
        "context": args.ctx_size // parallel if args.ctx_size else None,
        "parallel": parallel,
        "speculative": speculative,
        "extra_args": [a for a in mask_argv(args.extra) if a not in RENDERED_SWITCHES],
    }


def read_log(text: str) -> EngineReport:
    """The facts a llama-server log states, in the engine-neutral report."""
    return as_engine_report(parse_llamacpp_log(text))


def as_engine_report(report: LlamaCppReport) -> EngineReport:
    """KV tokens are the cache's cells (`n_ctx`); each slot's context is `n_ctx_slot`."""
    slots_logged = report.parallel_slots
    per_slot = report.ctx_per_slot or (
        report.ctx_size // slots_logged if report.ctx_size and slots_logged else None
    )
    return EngineReport(
        version=report.build,
        model=report.model_path,
        max_model_len=per_slot,
        kv_cache_dtype=report.kv_type_k,
        weights_gib=_weights_gib(report),
        kv_cache_gib=round(report.kv_buffer_mib / 1024, 4) if report.kv_buffer_mib else None,
        kv_cache_tokens=report.ctx_size,
        max_concurrency=round(report.ctx_size / per_slot, 2)
        if report.ctx_size and per_slot
        else None,
        errors=tuple(EngineError(kind=_error_kind(line), message=line) for line in report.errors),
    )


def _weights_gib(report: LlamaCppReport) -> float | None:
    """What the model's tensors take on the GPUs (the offloaded part), else its file size."""
    gpu = [b.mib for b in report.model_buffers if not b.device.upper().startswith("CPU")]
    if gpu:
        return round(sum(gpu) / 1024, 4)
    return report.model_size_gib


def _error_kind(line: str) -> ErrorKind:
    lowered = line.lower()
    if "out of memory" in lowered or "failed to allocate" in lowered:
        return ErrorKind.CUDA_OOM
    return ErrorKind.LOAD_FAILED


def unsupported_flags(seat: Seat, version: tuple[int, int, int]) -> list[str]:
    """llama.cpp builds are numbered, not released with flag changes fleet tracks."""
    return []
