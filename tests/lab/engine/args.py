"""vLLM's command line as the stand-in understands it.

Flags that change what the stand-in does are declared; any other `--flag [value]` is
accepted and echoed in `non-default args` (vLLM has hundreds), except flags that did
not exist yet in the image's version, which argparse rejects as vLLM's parser would.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from typing import Any

# Order of vLLM's own argument groups, so `non-default args` lists keys as vLLM does.
ORDER = (
    "model_tag",
    "host",
    "port",
    "api_key",
    "enable_auto_tool_choice",
    "tool_call_parser",
    "reasoning_parser",
    "model",
    "runner",
    "convert",
    "task",
    "tokenizer",
    "trust_remote_code",
    "dtype",
    "seed",
    "max_model_len",
    "quantization",
    "enforce_eager",
    "served_model_name",
    "tensor_parallel_size",
    "pipeline_parallel_size",
    "data_parallel_size",
    "enable_expert_parallel",
    "block_size",
    "gpu_memory_utilization",
    "kv_cache_memory_bytes",
    "kv_cache_dtype",
    "enable_prefix_caching",
    "max_num_batched_tokens",
    "max_num_seqs",
    "speculative_config",
)
# Flags that appeared after a version: (flag, first version that has it).
INTRODUCED = (("--kv-cache-memory-bytes", (0, 11)), ("--runner", (0, 10)), ("--convert", (0, 10)))


@dataclass
class ServeArgs:
    """The parsed command line plus what the stand-in derives from it."""

    model: str
    served_names: list[str]
    host: str
    port: int
    max_model_len: int | None
    gpu_memory_utilization: float | None
    kv_cache_memory_bytes: int | None
    kv_cache_dtype: str
    dtype: str
    tensor_parallel_size: int
    max_num_seqs: int
    quantization: str | None
    speculative: dict[str, Any] | None
    non_default: dict[str, Any] = field(default_factory=dict)


def version_tuple(version: str) -> tuple[int, int]:
    """'0.18.0' -> (0, 18)."""
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def parse_bytes(text: str) -> int:
    """vLLM's human-readable byte counts: '10737418240', '10G', '10GiB', '512M'."""
    units = {"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "ki": 2**10, "mi": 2**20, "gi": 2**30}
    low = text.strip().lower().removesuffix("b")
    for suffix in sorted(units, key=len, reverse=True):
        if low.endswith(suffix):
            return int(float(low[: -len(suffix)]) * units[suffix])
    return int(float(low))


def build_parser(prog: str, positional_model: bool) -> argparse.ArgumentParser:
    """The subset of vLLM's parser whose values the stand-in uses."""
    p = argparse.ArgumentParser(prog=prog, allow_abbrev=False)
    if positional_model:
        p.add_argument("model_tag", nargs="?", default=None)
    p.add_argument("--model", default=None)
    p.add_argument("--host", default=None)
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--served-model-name", nargs="+", default=None)
    p.add_argument("--max-model-len", type=parse_bytes, default=None)
    p.add_argument("--gpu-memory-utilization", type=float, default=None)
    p.add_argument("--kv-cache-memory-bytes", type=parse_bytes, default=None)
    p.add_argument("--kv-cache-dtype", default="auto")
    p.add_argument("--dtype", default="auto")
    p.add_argument("--tensor-parallel-size", "-tp", type=int, default=1)
    p.add_argument("--max-num-seqs", type=int, default=None)
    p.add_argument("--quantization", "-q", default=None)
    p.add_argument("--speculative-config", type=json.loads, default=None)
    p.add_argument("--enforce-eager", action="store_true", default=False)
    p.add_argument("--trust-remote-code", action="store_true", default=False)
    return p


def reject_unknown_to_version(
    parser: argparse.ArgumentParser, argv: list[str], version: str
) -> None:
    """Fail like argparse for flags the image's vLLM version did not have yet."""
    too_new = {flag for flag, since in INTRODUCED if version_tuple(version) < since}
    bad: list[str] = []
    for i, arg in enumerate(argv):
        if arg.split("=")[0] in too_new:
            bad.append(arg)
            if "=" not in arg and i + 1 < len(argv) and not argv[i + 1].startswith("-"):
                bad.append(argv[i + 1])
    if bad:
        parser.error(f"unrecognized arguments: {' '.join(bad)}")


def extra_flags(rest: list[str]) -> dict[str, Any]:
    """Other `--flag [value]` pairs, keyed as vLLM's namespace would key them."""
    out: dict[str, Any] = {}
    i = 0
    while i < len(rest):
        arg = rest[i]
        if not arg.startswith("--"):
            i += 1
            continue
        name, _, value = arg[2:].partition("=")
        key = name.replace("-", "_")
        if value:
            out[key] = value
        elif i + 1 < len(rest) and not rest[i + 1].startswith("--"):
            out[key], i = rest[i + 1], i + 1
        else:
            out[key] = not key.startswith("no_")
        i += 1
    return out


def non_default_args(
    ns: argparse.Namespace, parser: argparse.ArgumentParser, extras: dict[str, Any]
) -> dict[str, Any]:
    """The dict vLLM prints as `non-default args:`, in vLLM's key order."""
    values = {k: v for k, v in vars(ns).items() if v is not None and v != parser.get_default(k)}
    if getattr(ns, "model_tag", None):
        values["model"] = ns.model or ns.model_tag
    values.update(extras)
    rank = {k: i for i, k in enumerate(ORDER)}
    return dict(sorted(values.items(), key=lambda kv: rank.get(kv[0], len(ORDER))))


def parse_serve_args(argv: list[str], prog: str, positional_model: bool, version: str) -> ServeArgs:
    """Parse `vllm serve` (or the older api_server module) arguments; exits 2 on error."""
    parser = build_parser(prog, positional_model)
    reject_unknown_to_version(parser, argv, version)
    ns, rest = parser.parse_known_args(argv)
    if not positional_model and rest and not rest[0].startswith("-"):
        parser.error(f"unrecognized arguments: {rest[0]}")
    model = ns.model or getattr(ns, "model_tag", None)
    if not model:
        parser.error("the following arguments are required: model_tag")
    return ServeArgs(
        model=model,
        served_names=ns.served_model_name or [model],
        host=ns.host or "0.0.0.0",
        port=ns.port,
        max_model_len=ns.max_model_len,
        gpu_memory_utilization=ns.gpu_memory_utilization,
        kv_cache_memory_bytes=ns.kv_cache_memory_bytes,
        kv_cache_dtype=ns.kv_cache_dtype,
        dtype=ns.dtype,
        tensor_parallel_size=ns.tensor_parallel_size,
        max_num_seqs=ns.max_num_seqs or 256,
        quantization=ns.quantization,
        speculative=ns.speculative_config,
        non_default=non_default_args(ns, parser, extra_flags(rest)),
    )


if __name__ == "__main__":  # pragma: no cover - manual check
    print(parse_serve_args(sys.argv[1:], "vllm serve", True, "0.18.0"))
