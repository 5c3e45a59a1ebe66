"""Facts from a vLLM startup log: what the engine itself said about a seat.

Called by the reconciler on `docker logs` of an engine container (the apply health gate
reads `kv_cache_tokens` from here) and by `fleet explain log`. The formats differ across
releases (V0 `# GPU blocks`, V1 `GPU KV cache size: N tokens`, the 0.29 one-line KV
report, the ASCII-art banner since 0.16); lines carry process prefixes such as
`(EngineCore pid=N)` and `(VllmWorker rank=N pid=M)`, colours, and repeat once per worker.
A fact is the first value the log states; nothing is computed except V0's KV tokens
(blocks × block size). When a container restarted, only its last start is read.
"""

from __future__ import annotations

import re
from enum import StrEnum

from fleet.base import CoreModel
from fleet.facts._text import clean_lines, parse_assignments, parse_dict_literal, to_float, to_int

V0_DEFAULT_BLOCK_SIZE = 16  # vLLM's default --block-size on CUDA, when the log has none.

_HEADER = re.compile(
    r"\b(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? "
    r"\[?[\w.\-]+\.py:\d+\] ?"
)
_PREFIX = re.compile(r"^(?:\([A-Za-z][^()]*?pid=\d+[^()]*\)\s*)+")
_REPEATED = re.compile(r"\s*\[repeated \d+x across cluster\]$")
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
)
_BLOCKS = re.compile(
    r"# (?:GPU|CUDA|cuda|XPU|xpu|HPU|hpu|TPU|tpu|NPU|npu|neuron|cpu) blocks: (\d+)"
)
_KV_TOKENS = re.compile(r"GPU KV cache size: ([\d,]+) tokens")
_CONCURRENCY = re.compile(r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x")
_SPEC_REPR = re.compile(r"SpeculativeConfig\((.*)\)")


class EngineKind(StrEnum):
    """vLLM's engine generation, as the engine-config line names it."""

    V0 = "V0"
    V1 = "V1"


class ErrorKind(StrEnum):
    """The startup failures fleet recognises in a log."""

    CUDA_OOM = "cuda_oom"
    NO_KV_MEMORY = "no_kv_memory"
    KV_CACHE_TOO_SMALL = "kv_cache_too_small"
    FREE_MEMORY_TOO_LOW = "free_memory_too_low"
    ILLEGAL_MEMORY_ACCESS = "illegal_memory_access"
    CUBLAS = "cublas"
    LOAD_FAILED = "load_failed"


_ERRORS: tuple[tuple[ErrorKind, re.Pattern[str]], ...] = (
    (ErrorKind.CUDA_OOM, re.compile(r"CUDA out of memory|OutOfMemoryError|not enough GPU memory")),
    (ErrorKind.NO_KV_MEMORY, re.compile(r"No available memory for the cache blocks")),
    (ErrorKind.KV_CACHE_TOO_SMALL, re.compile(r"KV cache is needed, which is larger than")),
    (ErrorKind.FREE_MEMORY_TOO_LOW, re.compile(r"Free memory on device.*is less than desired")),
    (ErrorKind.ILLEGAL_MEMORY_ACCESS, re.compile(r"illegal memory access")),
    (ErrorKind.CUBLAS, re.compile(r"CUBLAS_STATUS_\w+|cuBLAS error")),
)


class EngineError(CoreModel):
    """One fatal error line: its kind and the message as logged (header stripped)."""

    kind: ErrorKind
    message: str


class SpeculativeFact(CoreModel):
    """Speculative decoding as the engine reports it: method, k and the drafter."""

    method: str | None = None
    num_tokens: int | None = None
    draft_model: str | None = None


class EngineReport(CoreModel):
    """What a vLLM startup log says; a fact the log does not state is None.

    Memory figures are per GPU, as each worker logs them (GiB). `kv_cache_tokens` is the
    logged `GPU KV cache size`, or for V0 `gpu_blocks * block_size`.
    """

    version: str | None = None
    engine: EngineKind | None = None
    model: str | None = None
    served_names: tuple[str, ...] = ()
    max_model_len: int | None = None
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    quantization: str | None = None
    kv_cache_dtype: str | None = None
    speculative: SpeculativeFact | None = None
    weights_gib: float | None = None
    kv_cache_gib: float | None = None
    gpu_blocks: int | None = None
    block_size: int | None = None
    kv_cache_tokens: int | None = None
    max_concurrency: float | None = None
    errors: tuple[EngineError, ...] = ()

    def to_explain_json(self) -> dict[str, object]:
        """The JSON `fleet explain log --json` prints, with exactly its documented keys."""
        spec = self.speculative
        return {
            "version": self.version,
            "engine": self.engine.value if self.engine else None,
            "model": self.model,
            "served_names": list(self.served_names),
            "max_model_len": self.max_model_len,
            "tensor_parallel_size": self.tensor_parallel_size,
            "pipeline_parallel_size": self.pipeline_parallel_size,
            "quantization": self.quantization,
            "kv_cache_dtype": self.kv_cache_dtype,
            "speculative": spec.model_dump(mode="json") if spec else None,
            "weights_gib": self.weights_gib,
            "kv_cache_gib": self.kv_cache_gib,
            "kv_cache_tokens": self.kv_cache_tokens,
            "max_concurrency": self.max_concurrency,
            "errors": [error.message for error in self.errors],
        }


def parse_vllm_log(text: str) -> EngineReport:
    """Read an engine report off a vLLM log; odd or empty input gives empty facts."""
    found: dict[str, str] = {}
    engine_config: dict[str, object] = {}
    args: dict[str, object] = {}
    errors: list[EngineError] = []
    for level, message in _messages(_last_start(clean_lines(text))):
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
        if level in (None, "ERROR", "CRITICAL"):
            _collect_error(message, errors)
    return _assemble(found, engine_config, args, tuple(errors))


def _last_start(lines: list[str]) -> list[str]:
    """The lines of the last engine start: a restarted container logs every run."""
    for pattern in (_VERSION, _NON_DEFAULT, _ENGINE):
        starts = [i for i, line in enumerate(lines) if pattern.search(line)]
        if starts:
            return lines[starts[-1] :]
    return lines


def _messages(lines: list[str]) -> list[tuple[str | None, str]]:
    """Each line as (log level or None, message without header, prefixes or Ray suffix)."""
    result: list[tuple[str | None, str]] = []
    for line in lines:
        header = _HEADER.search(line)
        if header:
            level: str | None = header.group("level")
            message = line[header.end() :]
        else:
            level, message = None, _PREFIX.sub("", line.strip())
        result.append((level, _REPEATED.sub("", message).strip()))
    return result


def _collect(message: str, found: dict[str, str]) -> None:
    """Record the first value of every single-line fact the message states."""
    simple = (
        ("max_model_len", _MAX_LEN),
        ("loading_model", _LOADING),
        ("weights_gib", _WEIGHTS),
        ("kv_cache_gib", _KV_GIB),
        ("gpu_blocks", _BLOCKS),
        ("kv_cache_tokens", _KV_TOKENS),
        ("banner_model", _BANNER_MODEL),
    )
    for key, pattern in simple:
        if key not in found and (match := pattern.search(message)):
            found[key] = next(group for group in match.groups() if group is not None)
    if "version" not in found and (match := _VERSION.search(message)):
        found["version"] = match.group(1) or match.group(2)
    if "max_concurrency" not in found and (match := _CONCURRENCY.search(message)):
        found["concurrency_len"], found["max_concurrency"] = match.group(1), match.group(2)


def _collect_error(message: str, errors: list[EngineError]) -> None:
    """Record a fatal-error message once, with the first kind it matches."""
    for kind, pattern in _ERRORS:
        if pattern.search(message):
            error = EngineError(kind=kind, message=message)
            if error not in errors:
                errors.append(error)
            return


def _assemble(
    found: dict[str, str],
    config: dict[str, object],
    args: dict[str, object],
    errors: tuple[EngineError, ...],
) -> EngineReport:
    """Pick each fact from its most authoritative source: engine config, args, other lines."""
    block_size = _int(args.get("block_size"))
    gpu_blocks = to_int(found.get("gpu_blocks"))
    kv_tokens = to_int(found.get("kv_cache_tokens"))
    if kv_tokens is None and gpu_blocks is not None:
        kv_tokens = gpu_blocks * (block_size or V0_DEFAULT_BLOCK_SIZE)
    return EngineReport(
        version=found.get("version") or found.get("engine_version"),
        engine=_engine_kind(found),
        model=_first_str(config.get("model"), args.get("model"), args.get("model_tag"))
        or found.get("banner_model")
        or found.get("loading_model"),
        served_names=_served_names(config, args),
        max_model_len=_first_int(
            config.get("max_seq_len"),
            found.get("max_model_len"),
            args.get("max_model_len"),
            found.get("concurrency_len"),
        ),
        tensor_parallel_size=_first_int(
            config.get("tensor_parallel_size"), args.get("tensor_parallel_size")
        ),
        pipeline_parallel_size=_first_int(
            config.get("pipeline_parallel_size"), args.get("pipeline_parallel_size")
        ),
        quantization=_first_str(config.get("quantization"), args.get("quantization")),
        kv_cache_dtype=_first_str(config.get("kv_cache_dtype"), args.get("kv_cache_dtype")),
        speculative=_speculative(config, args),
        weights_gib=to_float(found.get("weights_gib")),
        kv_cache_gib=to_float(found.get("kv_cache_gib")),
        gpu_blocks=gpu_blocks,
        block_size=block_size if gpu_blocks is not None else None,
        kv_cache_tokens=kv_tokens,
        max_concurrency=to_float(found.get("max_concurrency")),
        errors=errors,
    )


def _engine_kind(found: dict[str, str]) -> EngineKind | None:
    """The engine-config line decides; without it, V1's KV-token line implies V1."""
    if "engine" in found:
        return EngineKind(found["engine"])
    return EngineKind.V1 if "kv_cache_tokens" in found else None


def _served_names(config: dict[str, object], args: dict[str, object]) -> tuple[str, ...]:
    """All names from the args (vLLM takes several); the config line shows only the first."""
    names = args.get("served_model_name")
    if isinstance(names, list | tuple):
        listed = tuple(name for name in names if isinstance(name, str) and name)
        if listed:
            return listed
    single = _first_str(names, config.get("served_model_name"))
    return (single,) if single else ()


def _speculative(config: dict[str, object], args: dict[str, object]) -> SpeculativeFact | None:
    """From the engine line's `SpeculativeConfig(...)` repr, else the JSON the args carry."""
    if "speculative_config" in config:
        value = config["speculative_config"]
        match = _SPEC_REPR.search(value) if isinstance(value, str) else None
        if match is None:
            return None
        fields = parse_assignments(match.group(1))
        return SpeculativeFact(
            method=_first_str(fields.get("method")),
            num_tokens=_first_int(fields.get("num_spec_tokens")),
            draft_model=_first_str(fields.get("model"), fields.get("draft_model")),
        )
    spec = args.get("speculative_config")
    if isinstance(spec, dict):
        return SpeculativeFact(
            method=_first_str(spec.get("method")),
            num_tokens=_first_int(spec.get("num_speculative_tokens")),
            draft_model=_first_str(spec.get("model")),
        )
    if _first_str(args.get("speculative_model")):
        return SpeculativeFact(
            num_tokens=_first_int(args.get("num_speculative_tokens")),
            draft_model=_first_str(args.get("speculative_model")),
        )
    return None


def _int(value: object) -> int | None:
    """An int from an int or a digit string; bools and anything else are None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    return to_int(value) if isinstance(value, str) else None


def _first_int(*values: object) -> int | None:
    """The first value that is an integer."""
    for value in values:
        if (number := _int(value)) is not None:
            return number
    return None


def _first_str(*values: object) -> str | None:
    """The first value that is a non-empty string other than `None`."""
    for value in values:
        if isinstance(value, str) and value.strip() and value.strip() != "None":
            return value.strip()
    return None
