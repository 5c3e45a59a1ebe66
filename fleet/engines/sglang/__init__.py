"""SGLang: the argv fleet renders for a seat, reading it back, its log, its shape and metrics.

The argv is `python3 -m sglang.launch_server --model-path MODEL --served-model-name ...`
in a fixed order (the lmsysorg/sglang images start the server that way); `.argv` reads it
back, `.log` reads the start-up log, `.rules` holds the offline seat rules. SGLang sizes
its KV pool by `--mem-fraction-static` (weights and KV pool together: a seat's
`gpu_memory_utilization`); it takes no byte budget. Speculative decoding is
`--speculative-algorithm` (EAGLE, EAGLE3, NEXTN, ...) with `--speculative-num-steps k`,
`--speculative-eagle-topk 1`, `--speculative-num-draft-tokens k+1` and, for drafter
algorithms, `--speculative-draft-model-path`. `--enable-metrics` is always rendered: it
serves the `sglang:` Prometheus names drain, bench and the reconcile loop read
(`srt/observability/metrics_collector.py` of SGLang 0.5.23).
The log module is imported when a log is first read (`read_log`, `explain`): `fleet
validate` reads none, and every module imported costs each start of the command line.
"""

from __future__ import annotations

from collections.abc import Sequence

from fleet.engines.base import EngineBase, MetricNames, SeatLine, Shape
from fleet.engines.kv import KvSettings, read_kv_settings
from fleet.engines.report import EngineReport
from fleet.engines.sglang.argv import MODULE
from fleet.engines.sglang.argv import OWN_FLAGS as OWN_FLAGS
from fleet.engines.sglang.argv import detect as detect
from fleet.engines.sglang.argv import parse_args as parse_args
from fleet.engines.sglang.budget import SGLangBudget
from fleet.engines.sglang.rules import check_seat as check_seat
from fleet.facts.argv import EngineArgs
from fleet.secrets import mask_argv
from fleet.spec.models import Seat

NAME: str = "sglang"
LABEL: str = "SGLang"
DEFAULT_PORT: int = 30000
COMPARED: tuple[str, ...] = (
    "model",
    "served_names",
    "port",
    "context",
    "gpu_memory_utilization",
    "tensor_parallel_size",
    "speculative",
    "extra_args",
)
BUDGET = SGLangBudget
ESTIMATES_KV: bool = False
KV_SIZING: str = "SGLang sizes its KV pool by its memory fraction (--mem-fraction-static)"
RUNS_ON_CPU: bool = False
TOKENIZE: str | None = None
LONG_CONTEXT_ENV: str | None = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"
METRICS = MetricNames(
    running=("sglang:num_running_reqs",),
    waiting=("sglang:num_queue_reqs",),
    generated=("sglang:generation_tokens_total",),
    kv_usage=("sglang:token_usage",),
)
VERIFY_CALLS = "sglang:spec_verify_calls_total"
OOM_SIGNATURES: tuple[str, ...] = ("CUDA out of memory", "torch.OutOfMemoryError")
KV_FLAGS: tuple[str, ...] = ("--max-total-tokens", "--page-size", "--max-running-requests")
RENDERED_SWITCHES: tuple[str, ...] = ("--enable-metrics",)


def entrypoint(seat: Seat) -> list[str]:
    """`python3 -m sglang.launch_server`, as the lmsysorg/sglang images run it."""
    return ["python3", "-m", MODULE]


def render_args(seat: Seat) -> list[str]:
    """The server's argv after its entrypoint, in a fixed order."""
    args = ["--model-path", seat.model, "--served-model-name", seat.served_name]
    args += ["--host", "0.0.0.0", "--port", str(seat.port)]
    args += ["--context-length", str(seat.context), "--tp-size", str(len(seat.gpus))]
    if seat.gpu_memory_utilization is not None:
        args += ["--mem-fraction-static", f"{seat.gpu_memory_utilization:g}"]
    args += list(RENDERED_SWITCHES)
    spec = seat.speculative
    if spec is not None:
        args += ["--speculative-algorithm", spec.method]
        args += ["--speculative-num-steps", str(spec.num_tokens), "--speculative-eagle-topk", "1"]
        args += ["--speculative-num-draft-tokens", str(spec.num_tokens + 1)]
        if spec.draft_model:
            args += ["--speculative-draft-model-path", spec.draft_model]
    return args + list(seat.extra_args)


def healthcheck(seat: Seat) -> list[str]:
    """The container's own probe: /health answers 503 until the server is up."""
    probe = f"import urllib.request; urllib.request.urlopen('http://127.0.0.1:{seat.port}/health')"
    return ["CMD", "python3", "-c", probe]


def serves_chat(seat: Seat) -> bool:
    """An embedding server (`--is-embedding`) answers no chat completion."""
    return "--is-embedding" not in seat.extra_args


def _speculative(method: object, k: object, model: object) -> dict[str, object] | None:
    if not method:
        return None
    found: dict[str, object] = {"method": method, "num_speculative_tokens": k}
    if model:
        found["model"] = model
    return found


def desired_shape(seat: Seat) -> Shape:
    """The fields plan compares, as desired/ says them."""
    spec = seat.speculative
    return {
        "model": seat.model,
        "served_names": [seat.served_name],
        "port": seat.port,
        "context": seat.context,
        "gpu_memory_utilization": seat.gpu_memory_utilization,
        "tensor_parallel_size": len(seat.gpus),
        "speculative": _speculative(spec.method, spec.num_tokens, spec.draft_model)
        if spec
        else None,
        "extra_args": list(mask_argv(seat.extra_args)),
    }


def observed_shape(args: EngineArgs) -> Shape:
    """The same fields, read off the live process's argv."""
    spec = args.speculative_config or {}
    model = args.model
    return {
        "model": model,
        "served_names": sorted(args.served_model_names or ((model,) if model else ())),
        "port": args.port,
        "context": args.max_model_len,
        "gpu_memory_utilization": args.gpu_memory_utilization,
        "tensor_parallel_size": args.tensor_parallel_size or 1,
        "speculative": _speculative(
            spec.get("method"), spec.get("num_speculative_tokens"), spec.get("model")
        ),
        "extra_args": [a for a in mask_argv(args.extra) if a not in RENDERED_SWITCHES],
    }


def import_lines(args: EngineArgs) -> list[SeatLine]:
    """The memory fraction and speculative decoding of a seat file, off a live argv."""
    value = args.gpu_memory_utilization
    lines: list[SeatLine] = [
        ("gpu_memory_utilization", value, "--mem-fraction-static")
        if value is not None
        else ("gpu_memory_utilization", 0.9, "not set: SGLang picks one by GPU size; check it")
    ]
    spec = args.speculative_config or {}
    if spec.get("method"):
        found: dict[str, object] = {
            "method": spec["method"],
            "num_tokens": spec.get("num_speculative_tokens") or 1,
        }
        if spec.get("model"):
            found["draft_model"] = spec["model"]
        lines.append(("speculative", found, "--speculative-algorithm / --speculative-num-steps"))
    return lines


def kv_settings(
    args: Sequence[str], version: tuple[int, ...] | None, platform: str | None = None
) -> KvSettings:
    """`--kv-cache-dtype` and `--pipeline-parallel-size` (`--pp-size`) of an SGLang argv."""
    return read_kv_settings(
        args, dtype=("--kv-cache-dtype",), pipeline=("--pipeline-parallel-size", "--pp-size")
    )


def speculative_counts(samples: dict[str, float], seat: Seat) -> dict[str, float]:
    """From SGLang's counters: each verify call is a draft of k tokens that yields its
    accepted tokens and one more, so accepted = generated - verify calls."""
    verify = samples.get(VERIFY_CALLS)
    generated = samples.get(METRICS.generated[0])
    if verify is None or generated is None or seat.speculative is None:
        return {}
    return {
        "accepted": max(generated - verify, 0.0),
        "draft_tokens": verify * seat.speculative.num_tokens,
        "drafts": verify,
    }


def read_log(text: str) -> EngineReport:
    """The facts an SGLang startup log states."""
    from fleet.engines.sglang import log  # on first use: see the docstring

    return log.read_log(text)


class SGLang(EngineBase, functions=globals()):
    """SGLang behind `fleet.engines.base.Engine` (the constants and functions above)."""

    EXECUTABLE = r"[^ ]*python[0-9.]* +-m +sglang\.launch_server"
    VERIFY_CALLS = VERIFY_CALLS


ENGINE = SGLang()
