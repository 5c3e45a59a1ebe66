"""What an engine's startup log says, in one shape for every engine.

Each engine module's `read_log` returns an `EngineReport`; the apply health gate, the
observation, plan's predictions and `fleet explain log` read only this. Field names follow
vLLM's words where engines share a notion (a llama-server's KV cells are
`kv_cache_tokens`, its per-slot context `max_model_len`); a figure an engine's log does
not state stays None.
"""

from enum import StrEnum

from fleet.base import CoreModel


class SpeculativeFact(CoreModel):
    """Speculative decoding as the engine reports it: method, k and the drafter."""

    method: str | None = None
    num_tokens: int | None = None
    draft_model: str | None = None


class ErrorKind(StrEnum):
    """The startup failures fleet recognises in a log."""

    CUDA_OOM = "cuda_oom"
    NO_KV_MEMORY = "no_kv_memory"
    KV_CACHE_TOO_SMALL = "kv_cache_too_small"
    FREE_MEMORY_TOO_LOW = "free_memory_too_low"
    ILLEGAL_MEMORY_ACCESS = "illegal_memory_access"
    CUBLAS = "cublas"
    LOAD_FAILED = "load_failed"
    MAX_MODEL_LEN_TOO_LONG = "max_model_len_too_long"


class EngineError(CoreModel):
    """One fatal error line: its kind and the message as logged (header stripped)."""

    kind: ErrorKind
    message: str


class EngineKind(StrEnum):
    """An engine's generation as its log names it (vLLM's V0 and V1)."""

    V0 = "V0"
    V1 = "V1"


class EngineReport(CoreModel):
    """What an engine's startup log says; a fact the log does not state is None.

    Memory figures are per GPU, as each worker logs them (GiB). `weights_gib` is what one
    GPU holds: the first rank's `Model loading took`; `weights_gib_per_rank` has every
    worker's figure in rank order (in the order logged where the log names no ranks, as V0
    workers), which differ under pipeline parallelism; `weights_gib_total` is their sum.
    `kv_cache_tokens` is the logged `GPU KV cache size`, or for V0 `gpu_blocks *
    block_size`. `served_names` are the names the log gives, else the model, which vLLM
    then serves under. A start that vLLM refused because `--max-model-len` exceeds what
    the model's config.json allows has that error and both lengths (`requested_` /
    `derived_max_model_len`). `platform` is what the log says the engine ran on (`cpu`,
    `cuda`, `rocm`), `engine_args` the flags it states that change the KV layout (its
    non-default args and what the engine reset, as command-line flags), and
    `attention_block_size` the block a hybrid's attention was set to.
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
    weights_gib_per_rank: tuple[float, ...] = ()
    kv_cache_gib: float | None = None
    gpu_blocks: int | None = None
    block_size: int | None = None
    kv_cache_tokens: int | None = None
    max_concurrency: float | None = None
    requested_max_model_len: int | None = None
    derived_max_model_len: int | None = None
    errors: tuple[EngineError, ...] = ()
    platform: str | None = None
    engine_args: tuple[str, ...] = ()
    attention_block_size: int | None = None

    @property
    def weights_gib_total(self) -> float | None:
        """The weights over all ranks (GiB), None when the log states no figure."""
        per_rank = self.weights_gib_per_rank
        return round(sum(per_rank), 4) if per_rank else None

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
            "weights_gib_per_rank": list(self.weights_gib_per_rank),
            "kv_cache_gib": self.kv_cache_gib,
            "kv_cache_tokens": self.kv_cache_tokens,
            "max_concurrency": self.max_concurrency,
            "requested_max_model_len": self.requested_max_model_len,
            "derived_max_model_len": self.derived_max_model_len,
            "errors": [error.message for error in self.errors],
        }
