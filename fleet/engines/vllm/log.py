"""Facts from a vLLM startup log: what the engine itself said about a seat.

Called by the reconciler on an engine's log as its runtime reads it (the apply health gate
reads `kv_cache_tokens` from here) and by `fleet explain log`. The formats differ across
releases (V0 `# GPU blocks`, V1 `GPU KV cache size: N tokens`, the 0.29 one-line KV
report, the ASCII-art banner since 0.16; the CPU backend's worker states its budget as
`Explicitly set (0.25/23.54) GiB for KV cache on node 0.` or `Auto set (...)`, and 0.32
names the cache `CPU KV cache size`); lines carry process prefixes such as
`(EngineCore pid=N)` and `(VllmWorker rank=N pid=M)`, colours, and repeat once per worker;
a terminal or log collector may have hard-wrapped them (`fleet.engines.vllm.lines` rejoins
them). A fact is the first value the log states; nothing is computed except V0's KV tokens
(blocks × block size) and, when the log names no served model, the name vLLM then serves
under: the model. When a container restarted, only its last start is read. The failures
recognised are in `fleet.engines.vllm.errors`; served names and speculative decoding are
read off the engine-config line and the args by `fleet.engines.vllm.config`, the KV
layout's inputs (platform, the flags that change it) by `fleet.engines.vllm.log_layout`.
"""

from __future__ import annotations

import re

from fleet.engines.report import (
    EngineError,
    EngineKind,
    EngineReport,
    ErrorKind,
    SpeculativeFact,
)
from fleet.engines.vllm import log_layout
from fleet.engines.vllm.config import (
    first_of_int,
    first_of_str,
    int_of,
    served_names_of,
    speculative_of,
)
from fleet.engines.vllm.errors import collect_error, max_model_len_figures
from fleet.engines.vllm.lines import WorkerKey, in_rank_order, log_lines, messages, worker_key
from fleet.facts._text import (
    parse_assignments,
    parse_dict_literal,
    record_first,
    to_float,
    to_int,
)

__all__ = [
    "V0_DEFAULT_BLOCK_SIZE",
    "EngineError",
    "EngineKind",
    "EngineReport",
    "ErrorKind",
    "SpeculativeFact",
    "parse_vllm_log",
]

V0_DEFAULT_BLOCK_SIZE = 16  # vLLM's default --block-size on CUDA, when the log has none.

_VERSION = re.compile(r"vLLM API server version (\S+)|█.*\bversion\s+(\d+\.\d+\S*)")
_BANNER_MODEL = re.compile(r"█.*\bmodel\s+(\S+)")
_ENGINE = re.compile(r"Initializing an? (V1 )?LLM engine \(v([^)]*)\) with config: (.*)")
_NON_DEFAULT = re.compile(r"non-default args: (\{.*)")
_NAMESPACE = re.compile(r"args: Namespace\((.*)")
_MAX_LEN = re.compile(r"Using max model len (\d+)")
_LOADING = re.compile(r"Starting to load model (\S+?)(?:\.\.\.)?$")
_WEIGHTS = re.compile(r"(?:Loading model weights took|Model loading took) (-?[\d.]+) Gi?B")
_KV_GIB = re.compile(
    r"Available KV cache memory: (-?[\d.]+) GiB"  # V1, profiled
    r"|reserved (-?[\d.]+) ?GiB memory for KV Cache as specified"  # --kv-cache-memory-bytes
    r"|memory reserved for KV Cache is (-?[\d.]+) ?GiB"  # V0 / early V1 profiling summary
    r"|(?:Explicitly|Auto) set \((-?[\d.]+)/[\d.]+\) GiB for KV cache on node"  # CPU backend
)
_BLOCKS = re.compile(
    r"# (?:GPU|CUDA|cuda|XPU|xpu|HPU|hpu|TPU|tpu|NPU|npu|neuron|cpu) blocks: (\d+)"
)
_KV_TOKENS = re.compile(r"(?:GPU|CPU|XPU) KV cache size: ([\d,]+) tokens")
_CONCURRENCY = re.compile(r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x")


def parse_vllm_log(text: str) -> EngineReport:
    """Read an engine report off a vLLM log; odd or empty input gives empty facts."""
    found: dict[str, str] = {}
    engine_config: dict[str, object] = {}
    args: dict[str, object] = {}
    errors: list[EngineError] = []
    weights: dict[WorkerKey, float] = {}
    for level, prefix, message in messages(_last_start(log_lines(text))):
        if not engine_config and (match := _ENGINE.search(message)):
            found.setdefault("engine", "V1" if match.group(1) else "V0")
            found.setdefault("engine_version", match.group(2))
            engine_config = parse_assignments(match.group(3))
        elif not args and (match := _NON_DEFAULT.search(message)):
            args = parse_dict_literal(match.group(1))
        elif not args and (match := _NAMESPACE.search(message)):
            args = parse_assignments(match.group(1).removesuffix(")"))
        else:
            _collect(message, found)
            log_layout.collect(message, found)
            _collect_weights(prefix, message, weights)
        if level in (None, "ERROR", "CRITICAL"):
            collect_error(message, errors)
    return _assemble(found, engine_config, args, in_rank_order(weights), tuple(errors))


def _last_start(lines: list[str]) -> list[str]:
    """The lines of the last engine start: a restarted container logs every run."""
    for pattern in (_VERSION, _NON_DEFAULT, _ENGINE):
        starts = [i for i, line in enumerate(lines) if pattern.search(line)]
        if starts:
            return lines[starts[-1] :]
    return lines


def _collect(message: str, found: dict[str, str]) -> None:
    """Record the first value of every single-line fact the message states."""
    simple = (
        ("max_model_len", _MAX_LEN),
        ("loading_model", _LOADING),
        ("kv_cache_gib", _KV_GIB),
        ("gpu_blocks", _BLOCKS),
        ("kv_cache_tokens", _KV_TOKENS),
        ("banner_model", _BANNER_MODEL),
    )
    record_first(message, simple, found)
    if "version" not in found and (match := _VERSION.search(message)):
        found["version"] = match.group(1) or match.group(2)
    if "max_concurrency" not in found and (match := _CONCURRENCY.search(message)):
        found["concurrency_len"], found["max_concurrency"] = match.group(1), match.group(2)


def _collect_weights(prefix: str, message: str, weights: dict[WorkerKey, float]) -> None:
    """Record each worker's first `Model loading took` figure."""
    if (match := _WEIGHTS.search(message)) and (gib := to_float(match.group(1))) is not None:
        weights.setdefault(worker_key(prefix), gib)


def _assemble(
    found: dict[str, str],
    config: dict[str, object],
    args: dict[str, object],
    weights: tuple[float, ...],
    errors: tuple[EngineError, ...],
) -> EngineReport:
    """Pick each fact from its most authoritative source: engine config, args, other lines."""
    block_size = int_of(args.get("block_size"))
    gpu_blocks = to_int(found.get("gpu_blocks"))
    kv_tokens = to_int(found.get("kv_cache_tokens"))
    if kv_tokens is None and gpu_blocks is not None:
        kv_tokens = gpu_blocks * (block_size or V0_DEFAULT_BLOCK_SIZE)
    model = (
        first_of_str(config.get("model"), args.get("model"), args.get("model_tag"))
        or found.get("banner_model")
        or found.get("loading_model")
    )
    requested, derived = max_model_len_figures(errors)
    return EngineReport(
        version=found.get("version") or found.get("engine_version"),
        engine=_engine_kind(found),
        model=model,
        served_names=served_names_of(config, args, model),
        max_model_len=first_of_int(
            config.get("max_seq_len"),
            found.get("max_model_len"),
            args.get("max_model_len"),
            found.get("concurrency_len"),
        ),
        tensor_parallel_size=first_of_int(
            config.get("tensor_parallel_size"), args.get("tensor_parallel_size")
        ),
        pipeline_parallel_size=first_of_int(
            config.get("pipeline_parallel_size"), args.get("pipeline_parallel_size")
        ),
        quantization=first_of_str(config.get("quantization"), args.get("quantization")),
        kv_cache_dtype=first_of_str(config.get("kv_cache_dtype"), args.get("kv_cache_dtype")),
        speculative=speculative_of(config, args),
        weights_gib=weights[0] if weights else None,
        weights_gib_per_rank=weights,
        kv_cache_gib=to_float(found.get("kv_cache_gib")),
        gpu_blocks=gpu_blocks,
        block_size=block_size if gpu_blocks is not None else None,
        kv_cache_tokens=kv_tokens,
        max_concurrency=to_float(found.get("max_concurrency")),
        requested_max_model_len=requested,
        derived_max_model_len=derived,
        errors=errors,
        platform=log_layout.platform(config, found),
        engine_args=log_layout.engine_args(args, found),
        attention_block_size=to_int(found.get("attention_block")),
    )


def _engine_kind(found: dict[str, str]) -> EngineKind | None:
    """The engine-config line decides; without it, V1's KV-token line implies V1."""
    if "engine" in found:
        return EngineKind(found["engine"])
    return EngineKind.V1 if "kv_cache_tokens" in found else None
