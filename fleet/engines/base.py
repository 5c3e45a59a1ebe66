"""The shape every engine has, the base that supplies its defaults, and concurrency.

An engine (`fleet.engines.vllm.ENGINE`, `fleet.engines.llamacpp.ENGINE`, ...) satisfies
`Engine`: constants that say what the engine is (its default port, its Prometheus names,
which KV budget fields of a seat apply to it, the log lines that mean it ran out of memory,
the executable a host runs it as) and functions that render and read back its argv, read
its startup log, check a seat's engine settings offline and turn a live argv into a seat
file's lines. `EngineBase` supplies what most engines leave at its default (no KV layout
plan estimates, no flag an image predates, no MTP check, no speculative counters), so an
engine is a subclass that states only what is its own; `fleet.engines.register` adds one.
An engine package that writes its constants and functions at the top of its module makes
them its class's with `class X(EngineBase, functions=globals())`, not one line each.
Everything outside `fleet.engines` asks the engine; nothing else names an engine's flags,
metrics, log lines or name.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from types import FunctionType
from typing import TYPE_CHECKING, Any, Protocol

from fleet.base import CoreModel
from fleet.engines.kv import KvSettings
from fleet.engines.report import EngineReport
from fleet.facts.argv import EngineArgs
from fleet.spec.models import Seat
from fleet.spec.seat_budget import SeatBudget

if TYPE_CHECKING:
    from fleet.engines.llamacpp.memory import LlamaMemory
    from fleet.facts.gguf import GgufFacts
    from fleet.spec.load import Sources
    from fleet.spec.problems import Problem

Shape = dict[str, Any]
SeatLine = tuple[str, object, str]
"""One line of an imported seat file: the key, its value, and where the value came from."""


class MetricNames(CoreModel):
    """The Prometheus names fleet reads off an engine's /metrics (summed over labels).

    `running` and `waiting` are gauges of requests, `generated` a counter of generated
    tokens, `kv_usage` the gauge of the KV cache in use, 0 to 1 (the first name present
    wins: an engine's releases renamed some). The speculative-decoding counters, where the
    engine has them, are accepted draft tokens, proposed draft tokens and drafts (decode
    steps that verified a draft), as bench reads them before and after its runs.
    """

    running: tuple[str, ...]
    waiting: tuple[str, ...] = ()
    generated: tuple[str, ...] = ()
    kv_usage: tuple[str, ...] = ()
    spec_accepted: str | None = None
    spec_draft_tokens: str | None = None
    spec_drafts: str | None = None


class Engine(Protocol):
    """What fleet needs from an engine module (a module satisfies it).

    NAME is a seat's `engine:` value; LABEL the engine's name in prose. BUDGET is the model
    of the seat-file keys that size its KV cache and are its own (`kv_cache_bytes`,
    `gpu_memory_utilization`, `parallel`: `fleet.spec.seat_budget`). ESTIMATES_KV says
    whether plan can predict its KV tokens from config.json (`fleet.facts.kv_estimate`'s
    layout); KV_SIZING says in a sentence how it sizes its
    cache otherwise. RUNS_ON_CPU: whether a seat without GPUs is valid. TOKENIZE is the
    path that counts a prompt's tokens (`{"count": N}`), None where it has none.
    LONG_CONTEXT_ENV is the environment variable with which the engine starts a context
    above what config.json allows (set to 1), None where it has none.
    OOM_SIGNATURES are log lines of a runtime out-of-memory; OWN_FLAGS flags only this
    engine takes (a bare command with one is this engine's); KV_FLAGS flags beside the
    budget that change how many tokens a budget holds (a log of other values is no exact
    prediction). `fixed_kv_tokens` is the KV tokens a seat's settings fix without a model
    (llama.cpp: context x slots), None where the budget and the model decide.
    `kv_settings` reads what changes the KV layout off an argv (the KV dtype, pipeline
    parallel size, prefill chunk, a state's dtype) and the defaults of the release and
    platform (`version`: the image's or the log's, None when not known; `platform`:
    `cpu`, `cuda` or `rocm`, None when not known).
    `speculative_counts` turns /metrics samples (summed over labels) into the counters
    bench takes deltas of: `accepted` draft tokens, proposed `draft_tokens`, `drafts`
    (verify steps); empty where the engine exports none. `stream_decode_rate`: the decode
    tok/s the engine states of a request in an event of its streamed reply (llama.cpp's
    last chunk has its `timings`), None where it states none (bench then times the events
    as they arrive). `lacks_mtp_layers`: a method that
    drafts with the model's own MTP layers is asked of a model without them (`layers` from
    config.json, else the engine's model families).
    EXECUTABLE is an extended regular expression matching how a host starts the engine
    (the start of a unit's ExecStart value: `[^ ]*vllm`), so a hand-made engine unit is
    seen; RENDERED_SWITCHES the switches fleet renders on every seat (not a seat's extra
    args when imported); CPU_OVERHEAD_MIB the RAM the engine takes beside its weights and
    KV when it runs on the CPU; UNSIZED what plan says when a CPU seat's model could not be
    sized for it.
    """

    NAME: str
    LABEL: str
    COMPARED: tuple[str, ...]
    DEFAULT_PORT: int
    METRICS: MetricNames
    BUDGET: type[SeatBudget]
    ESTIMATES_KV: bool
    KV_SIZING: str
    RUNS_ON_CPU: bool
    TOKENIZE: str | None
    LONG_CONTEXT_ENV: str | None
    OOM_SIGNATURES: tuple[str, ...]
    STOP_SIGNATURES: tuple[str, ...]
    OWN_FLAGS: frozenset[str]
    KV_FLAGS: tuple[str, ...]
    EXECUTABLE: str
    RENDERED_SWITCHES: tuple[str, ...]
    CPU_OVERHEAD_MIB: int
    UNSIZED: str
    SIZES_FROM_HEADER: bool

    def detect(self, tokens: list[str]) -> int | None: ...

    def parse_args(self, engine: str, program: list[str], rest: list[str]) -> EngineArgs: ...

    def entrypoint(self, seat: Seat) -> list[str]: ...

    def render_args(self, seat: Seat) -> list[str]: ...

    def healthcheck(self, seat: Seat) -> list[str]: ...

    def serves_chat(self, seat: Seat) -> bool: ...

    def desired_shape(self, seat: Seat) -> Shape: ...

    def observed_shape(self, args: EngineArgs) -> Shape: ...

    def read_log(self, text: str) -> EngineReport: ...

    def explain(self, text: str) -> dict[str, object] | None: ...

    def unsupported_flags(self, seat: Seat, version: tuple[int, int, int]) -> list[str]: ...

    def check_seat(self, seat: Seat, src: Sources) -> Iterator[Problem]: ...

    def import_lines(self, args: EngineArgs) -> list[SeatLine]: ...

    def fixed_kv_tokens(self, seat: Seat) -> int | None: ...

    def kv_settings(
        self, args: Sequence[str], version: tuple[int, ...] | None, platform: str | None = None
    ) -> KvSettings: ...

    def lacks_mtp_layers(
        self,
        method: str,
        model_types: tuple[str | None, ...],
        architecture: str | None,
        layers: int | None,
    ) -> bool: ...

    def speculative_counts(self, samples: dict[str, float], seat: Seat) -> dict[str, float]: ...

    def stream_decode_rate(self, event: Mapping[str, Any]) -> float | None: ...

    def predict_memory(
        self, header: GgufFacts, size_bytes: int | None, seat: Seat, where: str
    ) -> LlamaMemory | None: ...


ENGINE_MEMBERS = frozenset(
    name for name in (*vars(Engine), *Engine.__annotations__) if not name.startswith("_")
)
"""The names of `Engine`'s constants and functions."""


class EngineBase:
    """The defaults of an engine: a subclass gives its constants and the functions that are
    its own, and inherits these (see `Engine` for what each means).

    `class X(EngineBase, functions=globals())` takes every member of `Engine` its module
    defines (or imports) at top level that the class body does not, functions as static
    methods: a package keeps its functions plain and testable, and its class is the list of
    what is its own beside them.
    """

    if TYPE_CHECKING:  # an engine's own: its class body, or its module's (`functions`)
        NAME: str
        LABEL: str
        COMPARED: tuple[str, ...]
        DEFAULT_PORT: int
        METRICS: MetricNames
        KV_SIZING: str
        EXECUTABLE: str

        def detect(self, tokens: list[str]) -> int | None: ...
        def parse_args(self, engine: str, program: list[str], rest: list[str]) -> EngineArgs: ...
        def entrypoint(self, seat: Seat) -> list[str]: ...
        def render_args(self, seat: Seat) -> list[str]: ...
        def healthcheck(self, seat: Seat) -> list[str]: ...
        def desired_shape(self, seat: Seat) -> Shape: ...
        def observed_shape(self, args: EngineArgs) -> Shape: ...
        def check_seat(self, seat: Seat, src: Sources) -> Iterator[Problem]: ...
        def import_lines(self, args: EngineArgs) -> list[SeatLine]: ...

    def __init_subclass__(
        cls, functions: Mapping[str, object] | None = None, **kwargs: Any
    ) -> None:
        super().__init_subclass__(**kwargs)
        for name in sorted(ENGINE_MEMBERS & set(functions or {})):
            if name not in cls.__dict__ and functions is not None:
                value = functions[name]
                bound = staticmethod(value) if isinstance(value, FunctionType) else value
                setattr(cls, name, bound)

    BUDGET: type[SeatBudget] = SeatBudget
    ESTIMATES_KV: bool = False
    RUNS_ON_CPU: bool = False
    TOKENIZE: str | None = None
    LONG_CONTEXT_ENV: str | None = None
    OOM_SIGNATURES: tuple[str, ...] = ()
    STOP_SIGNATURES: tuple[str, ...] = ()  # log lines of a stop the engine was asked for
    OWN_FLAGS: frozenset[str] = frozenset()
    KV_FLAGS: tuple[str, ...] = ()
    RENDERED_SWITCHES: tuple[str, ...] = ()
    CPU_OVERHEAD_MIB: int = 512
    UNSIZED: str = "its size is unknown"
    SIZES_FROM_HEADER: bool = False  # plan predicts its buffers from the model's GGUF header

    def read_log(self, text: str) -> EngineReport:
        """No log is read: every figure unknown."""
        return EngineReport()

    def explain(self, text: str) -> dict[str, object] | None:
        """`fleet explain log --json` of the engine's report; None when it states nothing."""
        report = self.read_log(text)
        return report.to_explain_json() if report != EngineReport() else None

    def serves_chat(self, seat: Seat) -> bool:
        """A seat answers chat completions."""
        return True

    def unsupported_flags(self, seat: Seat, version: tuple[int, int, int]) -> list[str]:
        """No rendered flag is newer than a release fleet runs."""
        return []

    def fixed_kv_tokens(self, seat: Seat) -> int | None:
        """None: the budget and the model decide (the log says it)."""
        return None

    def kv_settings(
        self, args: Sequence[str], version: tuple[int, ...] | None, platform: str | None = None
    ) -> KvSettings:
        """The defaults: no flag changes the KV layout plan estimates."""
        return KvSettings()

    def predict_memory(
        self, header: GgufFacts, size_bytes: int | None, seat: Seat, where: str
    ) -> LlamaMemory | None:
        """None: the engine's buffers are not predicted from a GGUF header
        (`SIZES_FROM_HEADER` says which engines do)."""
        return None

    def lacks_mtp_layers(
        self,
        method: str,
        model_types: tuple[str | None, ...],
        architecture: str | None,
        layers: int | None,
    ) -> bool:
        """False: no method is checked against the model's MTP layers."""
        return False

    def speculative_counts(self, samples: dict[str, float], seat: Seat) -> dict[str, float]:
        """None of the counters: the engine exports none."""
        return {}

    def stream_decode_rate(self, event: Mapping[str, Any]) -> float | None:
        """None: the engine states no decode rate in its stream."""
        return None


def concurrency(kv_tokens: int | None, context: int | None) -> float | None:
    """KV-cache tokens / context: how many full-context requests fit at once."""
    if not kv_tokens or not context or context <= 0:
        return None
    return kv_tokens / context
