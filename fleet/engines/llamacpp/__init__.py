"""llama.cpp's llama-server: the argv fleet renders, reading it back, its log, its shape.

A llama.cpp seat sizes its KV cache by its context: `--ctx-size` is the whole cache
(`context` × `parallel` slots) and `--parallel` the number of slots, so each slot holds
`context` tokens and concurrency (KV cells / context) is the number of slots. There is
no KV byte budget or memory fraction to render. Speculative decoding drafts with a
separate GGUF model: `--spec-type draft-simple --spec-draft-model M --spec-draft-n-max
k` on the builds that have them (b8960 on), `--model-draft M --draft-max k` on older
ones, as the seat's image tag names its build (`argv.draft_flags`).
`fleet.engines.llamacpp.argv` reads either spelling back; the startup log is read by
`fleet.engines.llamacpp.log` and reported in the engine-neutral `EngineReport`.
The log module is imported when a log is first read (`read_log`, `explain`): `fleet
validate` reads none, and every module imported costs each start of the command line.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from fleet.engines.base import EngineBase, MetricNames, SeatLine, Shape
from fleet.engines.llamacpp.argv import OWN_FLAGS as OWN_FLAGS
from fleet.engines.llamacpp.argv import detect as detect
from fleet.engines.llamacpp.argv import draft_flags, image_build, without_draft_type
from fleet.engines.llamacpp.argv import parse_args as parse_args
from fleet.engines.llamacpp.budget import LlamaCppBudget
from fleet.engines.report import EngineError, EngineReport, ErrorKind, SpeculativeFact
from fleet.facts.argv import EngineArgs
from fleet.secrets import mask_argv
from fleet.spec.load import Sources
from fleet.spec.models import Seat
from fleet.spec.problems import Problem
from fleet.spec.seat_rules import seat_file

if TYPE_CHECKING:
    from fleet.engines.llamacpp.log import LlamaCppReport
    from fleet.engines.llamacpp.memory import LlamaMemory
    from fleet.facts.gguf import GgufFacts

NAME: str = "llama.cpp"
LABEL: str = "llama-server"
DEFAULT_PORT: int = 8080
BUDGET = LlamaCppBudget
ESTIMATES_KV: bool = False
KV_SIZING: str = "llama.cpp sizes its KV cache by context x parallel slots"
RUNS_ON_CPU: bool = True
TOKENIZE: str | None = None  # its /tokenize answers the tokens, not a count
LONG_CONTEXT_ENV: str | None = None
METRICS = MetricNames(
    running=("llamacpp:requests_processing",),
    waiting=("llamacpp:requests_deferred",),
    generated=("llamacpp:tokens_predicted_total",),
    kv_usage=("llamacpp:kv_cache_usage_ratio",),  # builds before its KV metrics were dropped
    spec_accepted="llamacpp:spec_decode_num_accepted_tokens_total",
    spec_draft_tokens="llamacpp:spec_decode_num_draft_tokens_total",
    spec_drafts="llamacpp:spec_decode_num_drafts_total",
)
OOM_SIGNATURES: tuple[str, ...] = ("cudaMalloc failed: out of memory", "failed to allocate")
KV_FLAGS: tuple[str, ...] = ()
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
RENDERED_SWITCHES: tuple[str, ...] = ("--metrics",)
# The verbosity fleet renders, not compared either: b11434 logs its build, the model's
# buffers and the KV cache's cells and types at verbosity 4 only (the default, 3, logs
# the slots alone; tests/corpus/llamacpp-logs). A seat that sets its own verbosity in
# extra_args keeps it, and fleet renders none beside it.
VERBOSITY = ("-lv", "4")
VERBOSITY_FLAGS = ("-lv", "--verbosity", "--log-verbosity", "-v", "--verbose")


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
        args += draft_flags(image_build(seat.image), spec.draft_model, spec.num_tokens)
    return args + list(seat.extra_args) + list(rendered_verbosity(seat.extra_args))


def rendered_verbosity(extra_args: Sequence[str]) -> tuple[str, ...]:
    """`-lv 4`, unless the seat's own flags set a verbosity."""
    own = any(a.partition("=")[0] in VERBOSITY_FLAGS for a in extra_args)
    return () if own else VERBOSITY


def without_rendered(extra: Sequence[str]) -> list[str]:
    """A live argv's other flags without those fleet renders anyway (`--metrics`, `-lv 4`
    in either spelling), so neither plan nor import counts them as the seat's own."""
    out: list[str] = []
    skip = False
    for i, token in enumerate(extra):
        if skip:
            skip = False
        elif token in RENDERED_SWITCHES or token in ("-lv=4", "--verbosity=4"):
            continue
        elif token in ("-lv", "--verbosity") and list(extra[i + 1 : i + 2]) == ["4"]:
            skip = True
        else:
            out.append(token)
    return out


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
        "extra_args": without_rendered(mask_argv(seat.extra_args)),
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
        "extra_args": without_rendered(
            mask_argv(without_draft_type(args.extra) if args.draft_model else args.extra)
        ),
    }


def serves_chat(seat: Seat) -> bool:
    """An embedding or reranking server (`--embedding`, `--reranking`) answers no chat."""
    return not {"--embedding", "--embeddings", "--reranking", "--rerank"} & set(seat.extra_args)


def check_seat(seat: Seat, src: Sources) -> Iterator[Problem]:
    """Speculative decoding only with a draft model (a KV byte budget or fraction is
    refused where it is written, by `LlamaCppBudget`)."""
    spec = seat.speculative
    if spec is not None and spec.method != "draft_model":
        yield src.problem(
            seat_file(seat),
            ("speculative", "method"),
            f"llama.cpp drafts only with a separate model: method draft_model, not {spec.method!r}",
        )
    elif spec is not None and not spec.draft_model:
        yield src.problem(
            seat_file(seat),
            ("speculative",),
            f"method {spec.method!r} drafts with a separate model: set draft_model",
        )


def import_lines(args: EngineArgs) -> list[SeatLine]:
    """The slots and the draft model of a seat file, read off a live llama-server argv."""
    lines: list[SeatLine] = [("parallel", args.parallel_slots or 1, "--parallel")]
    if args.draft_model:
        drafted: dict[str, object] = {"method": "draft_model", "num_tokens": args.draft_max or 16}
        drafted["draft_model"] = args.draft_model
        lines.append(("speculative", drafted, "--spec-draft-model / --spec-draft-n-max"))
    return lines


def fixed_kv_tokens(seat: Seat) -> int | None:
    """Every slot holds a whole context: context x parallel cells."""
    return seat.context * slots(seat)


def explain(text: str) -> dict[str, object] | None:
    """`fleet explain log --json` for a llama-server log; None when it states nothing."""
    from fleet.engines.llamacpp.log import LlamaCppReport, parse_llamacpp_log

    report = parse_llamacpp_log(text)
    return report.to_explain_json() if report != LlamaCppReport() else None


def speculative_counts(samples: dict[str, float], seat: Seat) -> dict[str, float]:
    """llama-server's spec_decode counters (builds of 2026 on; older ones export none)."""
    from fleet.engines.metrics import named_counts

    return named_counts(samples, METRICS)


def stream_decode_rate(event: Mapping[str, Any]) -> float | None:
    """The decode speed llama-server measured of the request itself, in its stream's last
    chunk (`timings`: `predicted_n` tokens in `predicted_ms`): what the controller's clock
    cannot see when a busy link hands it the events in bursts. None without such timings."""
    timings = event.get("timings")
    if not isinstance(timings, Mapping):
        return None
    tokens, millis = timings.get("predicted_n"), timings.get("predicted_ms")
    if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 2:
        return None
    if not isinstance(millis, int | float) or isinstance(millis, bool):
        return None
    return tokens / (millis / 1000) if math.isfinite(millis) and millis > 0 else None


def predict_memory(
    header: GgufFacts, size_bytes: int | None, seat: Seat, where: str
) -> LlamaMemory | None:
    """The seat's buffers from its model's header (`fleet.engines.llamacpp.memory`,
    imported when asked: `fleet validate` reads no header)."""
    from fleet.engines.llamacpp import memory

    return memory.predict_memory(header, size_bytes, seat, where)


def read_log(text: str) -> EngineReport:
    """The facts a llama-server log states, in the engine-neutral report."""
    from fleet.engines.llamacpp.log import parse_llamacpp_log  # on first use: see the docstring

    return as_engine_report(parse_llamacpp_log(text))


def as_engine_report(report: LlamaCppReport) -> EngineReport:
    """KV tokens are the cache's cells (`n_ctx`, else the KV size line's cells); each
    slot's context is `n_ctx_slot`; k is the drafter's `n_max` where the log traces it; the
    KV memory is the target's (a drafter's context is its own); a drafter is the method."""
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
        kv_cache_tokens=report.ctx_size or report.kv_cells,
        speculative=(
            SpeculativeFact(
                method=report.speculative_method,
                num_tokens=report.draft_max,
                draft_model=report.draft_model,
            )
            if report.speculative_method
            else None
        ),
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


class LlamaCpp(EngineBase, functions=globals()):
    """llama.cpp's llama-server behind `fleet.engines.base.Engine` (the constants and functions
    above)."""

    EXECUTABLE = r"[^ ]*llama-server"
    UNSIZED = "its GGUF header was not read"
    CPU_OVERHEAD_MIB = 512  # llama-server's compute buffers and the process itself
    SIZES_FROM_HEADER = True


ENGINE = LlamaCpp()
