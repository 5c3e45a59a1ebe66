"""desired/seats/<name>.yaml: one engine serving one model (`Seat`), and its speculation.

Part of the desired-state model (`fleet.spec.models`, which re-exports it). The keys that
size a seat's KV cache are its engine's (`fleet.spec.seat_budget`).
"""

from typing import Any, Literal

from pydantic import ConfigDict, Field, SerializeAsAny, model_validator
from pydantic.json_schema import SkipJsonSchema

from fleet.base import CoreModel
from fleet.spec.fleet_settings import ConcurrencyBand
from fleet.spec.host_settings import WithSettings, default_settings, settings_schema
from fleet.spec.model_origin import ModelOrigin, path_or_mapping, split_model_mapping
from fleet.spec.seat_budget import SEAT_BUDGETS, SeatBudget


class Speculative(CoreModel):
    """Speculative decoding of a seat, rendered as its engine takes it."""

    method: str = Field(description="vLLM method, e.g. mtp, qwen3_5_mtp, eagle3, dflash, ngram.")
    num_tokens: int = Field(description="Speculative tokens per step (k).")
    draft_model: str | None = Field(None, description="Drafter path, for methods that need one.")


class Seat(WithSettings):
    """desired/seats/<name>.yaml: one engine container serving one model. The keys that
    size its KV cache are its engine's (`kv_cache_bytes` or `gpu_memory_utilization` for
    vLLM, `parallel` for llama.cpp), read into `budget` (`fleet.spec.seat_budget`)."""

    model_config = ConfigDict(json_schema_extra=settings_schema(SEAT_BUDGETS, "engine"))
    SETTINGS_TAG = ("engine", "vllm")
    SETTINGS_MODELS = SEAT_BUDGETS
    SETTINGS_OF = "seat"
    SETTINGS_FIELD = "budget"
    SETTINGS_TAKE_UNKNOWN = False

    name: str = Field(description="Seat name; equals the file name.")
    host: str = Field(description="Host the seat runs on.")
    gpus: tuple[int, ...] = Field(
        description="GPU indices; >1 is tensor parallel; [] runs on the CPU "
        "(llama.cpp, vLLM's CPU build)."
    )
    engine: str = Field(
        "vllm", description="Engine kind: one of fleet's engine modules (vllm, llama.cpp, ...)."
    )
    image: str = Field(description="Image reference, pinned: repo:tag[@sha256:digest].")
    model: str = Field(
        description="Model directory (or GGUF file) on the host, or {path, source, ...}.",
        json_schema_extra=path_or_mapping,
    )
    model_origin: SkipJsonSchema[ModelOrigin | None] = Field(
        None, description="Written as `model: {path, source, ...}`: how to fetch it."
    )
    served_name: str = Field(description="Name the engine serves the model under.")
    context: int = Field(description="Context length (max model len) in tokens.")
    concurrency_band: ConcurrencyBand | None = Field(
        None, description="Overrides the fleet's band."
    )
    tensor_parallel_size: int | None = Field(
        None, description="Must equal the number of GPUs; implied when omitted."
    )
    speculative: Speculative | None = Field(None, description="Speculative decoding.")
    port: int = Field(ge=1, le=65535, description="Port the engine listens on.")
    strategy: Literal["auto", "surge", "recreate"] = Field(
        "auto",
        description="How a change replaces the seat: surge (the new copy starts beside the "
        "old on the second port, the gateway moves, the old drains), recreate (stop, then "
        "start), auto (surge when plan predicts both copies fit on the seat's GPUs).",
    )
    handoff: bool = Field(
        True,
        description="Whether a recreate may hand the seat's aliases to their gateway "
        "fallbacks while it loads (false: a different model must never answer for it; its "
        "aliases are down while it loads).",
    )
    surge_port: int | None = Field(
        None, ge=1, le=65535, description="The second port a surge alternates to [port + 1000]."
    )
    aliases: tuple[str, ...] = Field((), description="Gateway aliases routed to this seat.")
    extra_args: tuple[str, ...] = Field((), description="Engine arguments passed verbatim.")
    env: dict[str, str] = Field(default_factory=dict, description="Container environment.")
    budget: SkipJsonSchema[SerializeAsAny[SeatBudget]] = Field(
        default_factory=lambda: default_settings(SEAT_BUDGETS, "vllm", SeatBudget),
        description="The engine's own keys (its KV budget), read from the file's other keys.",
    )

    @model_validator(mode="before")
    @classmethod
    def _model_mapping(cls, data: Any) -> Any:
        return split_model_mapping(data)

    @property
    def kv_cache_bytes(self) -> int | None:
        """The KV-cache budget per GPU in bytes, where the seat's engine takes one."""
        return self.budget.kv_bytes()

    @property
    def gpu_memory_utilization(self) -> float | None:
        """The fraction of GPU memory for the engine, where its engine takes one."""
        return self.budget.memory_fraction()

    @property
    def parallel(self) -> int | None:
        """The parallel slots, each holding `context` tokens, where its engine has them."""
        return self.budget.slots()

    def band(self, default: ConcurrencyBand) -> ConcurrencyBand:
        """The band this seat is held to."""
        return self.concurrency_band or default

    @property
    def tp_size(self) -> int:
        """How many ranks the engine splits the model over: its GPUs, one on the CPU."""
        return max(len(self.gpus), 1)

    @property
    def second_port(self) -> int:
        """The port a surge starts the new copy on (and the next surge leaves)."""
        return self.surge_port if self.surge_port is not None else self.port + 1000
