"""vLLM: the argv fleet renders for a seat, reading it back, the log, the compared shape.

The argv is `vllm serve MODEL --served-model-name ... --max-model-len ...` in a fixed
order, so that the health gate can check the running process carries every flag the spec
implies. The startup log is read by `fleet.facts.vllm_log`. `FLAG_SINCE` lists the flags
fleet renders with the first vLLM release that accepts them (from vLLM's changelogs).
"""

from __future__ import annotations

import json
from typing import Any

from fleet.engines.base import Shape
from fleet.facts.argv import EngineArgs
from fleet.facts.vllm_log import EngineReport, parse_vllm_log
from fleet.secrets import mask_argv
from fleet.spec.models import Seat

NAME: str = "vllm"
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
        str(len(seat.gpus)),
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
        "tensor_parallel_size": len(seat.gpus),
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


def read_log(text: str) -> EngineReport:
    """The facts a vLLM startup log states."""
    return parse_vllm_log(text)


def unsupported_flags(seat: Seat, version: tuple[int, int, int]) -> list[str]:
    """`--flag needs vLLM >= X` for each rendered flag the image's release predates."""
    args = render_args(seat)
    return [
        f"{flag} needs vLLM >= {'.'.join(map(str, since))}"
        for flag, since in sorted(FLAG_SINCE.items())
        if flag in args and version < since
    ]
