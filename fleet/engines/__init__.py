"""One package per engine, the registry of engines, and the seam that picks one.

Each engine package (`vllm`, `llamacpp`, `sglang`) owns everything fleet knows about that
engine and exports it as `ENGINE`, a `fleet.engines.base.EngineBase` that satisfies
`Engine`: the entrypoint and argv it renders from a seat, reading that argv back from a
live process (its program included), its startup log parser, the normalized shape plan
compares, the container health check, its Prometheus names, whether it serves chat, its
offline seat rules, what import reads off its argv, the flags a given image version
accepts, how a host starts it and what it takes in RAM on the CPU. Render, diff, health,
assemble, blockers, the runtimes and the workflows call `engine_for(seat.engine)` (or
`read_process(argv)` when observing a process) and hold no engine knowledge of their own.
Another engine is one package whose engine `register` adds (the built-in ones are
registered here).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fleet.engines import llamacpp, sglang, vllm
from fleet.engines import rules as _rules
from fleet.engines.base import (
    ENGINE_MEMBERS,
    Engine,
    EngineBase,
    MetricNames,
    Shape,
    concurrency,
)
from fleet.engines.report import EngineReport
from fleet.facts.argv import EngineArgs, program_name, unwrap_shell
from fleet.spec.load import LoadedFleet
from fleet.spec.models import Seat
from fleet.spec.problems import Problem
from fleet.spec.seat_budget import SEAT_BUDGETS, register_budget
from fleet.spec.validate import Rule

if TYPE_CHECKING:  # what only reading a host's /metrics or a model's header needs
    from fleet.engines.llamacpp.memory import LlamaMemory as EngineMemory
    from fleet.facts.engine_metrics import EngineLoad
    from fleet.facts.gguf import GgufFacts


def __getattr__(name: str) -> Any:
    """`EngineMemory` (a llama.cpp seat's buffers), imported when first asked for:
    `fleet validate` reads no model header."""
    if name == "EngineMemory":
        from fleet.engines.llamacpp.memory import LlamaMemory

        return LlamaMemory
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "ENGINES",
    "Engine",
    "EngineBase",
    "EngineMemory",
    "MetricNames",
    "Shape",
    "concurrency",
    "engine_for",
    "engine_load",
    "engine_of",
    "explain_log",
    "parse_engine_argv",
    "read_process",
    "register",
    "running_requests",
    "unregister",
    "validate_fleet",
]

ENGINES: dict[str, Engine] = {}
"""Every engine a seat's `engine:` may name, by name (filled by `register`)."""


def register(engine: Engine) -> None:
    """Make an engine known to validate, plan, apply, observe and import by its NAME."""
    missing = sorted(name for name in ENGINE_MEMBERS if not hasattr(engine, name))
    if missing:
        raise TypeError(f"engine {type(engine).__name__} lacks {', '.join(missing)}")
    ENGINES[engine.NAME] = engine
    register_budget(engine.NAME, engine.BUDGET)


def unregister(name: str) -> None:
    """Forget an engine `register` added (a test's own, once it is done)."""
    ENGINES.pop(name, None)
    SEAT_BUDGETS.pop(name, None)


register(vllm.ENGINE)
register(llamacpp.ENGINE)
register(sglang.ENGINE)


def engine_for(name: str) -> Engine:
    """The engine module of a seat's `engine` field."""
    return ENGINES[name]


def sizes_from_header(name: str) -> bool:
    """Whether the engine's buffers are predicted from its model's GGUF header (llama.cpp)."""
    return engine_for(name).SIZES_FROM_HEADER


def predict_memory(
    seat: Seat, header: GgufFacts, size_bytes: int | None, where: str
) -> EngineMemory | None:
    """The buffers the seat's engine will hold, from its model's header; None where the
    engine does not size them so (`sizes_from_header`) or the header is too thin."""
    return engine_for(seat.engine).predict_memory(header, size_bytes, seat, where)


def engine_of(args: EngineArgs) -> Engine | None:
    """The engine a live process runs, from its parsed argv; None for no engine."""
    return ENGINES.get(args.engine) if args.engine else None


def parse_engine_argv(argv: Sequence[str]) -> EngineArgs:
    """Read an engine's flags off its argv, with the table of the engine that starts it.

    A program wrapped in a shell (`sh -c "exec ..."`) or run by the interpreter
    (`/usr/bin/python3 /usr/local/bin/vllm serve`, as /proc shows a console script) is
    unwrapped; a bare command (no program) is recognised by flags only one engine takes.
    """
    tokens = unwrap_shell([str(token) for token in argv])
    found = _split_program(tokens)
    if found is not None:
        engine, program, rest = found
        return engine.parse_args(engine.NAME, program, rest)
    flags = {arg.split("=", 1)[0].replace("_", "-") for arg in tokens if arg.startswith("-")}
    for engine in sorted(ENGINES.values(), key=lambda e: e.NAME):
        if flags & engine.OWN_FLAGS:
            return engine.parse_args(engine.NAME, [], tokens)
    return vllm.ENGINE.parse_args("", [], tokens).model_copy(update={"engine": None})


def _split_program(tokens: list[str]) -> tuple[Engine, list[str], list[str]] | None:
    """The engine whose program starts `tokens`, that program, and the rest."""
    if not tokens:
        return None
    wrapped = program_name(tokens[0]).startswith("python") and tokens[1:2] != ["-m"]
    if wrapped and len(tokens) > 1 and not tokens[1].startswith("-"):
        inner = _split_program(tokens[1:])
        if inner is not None:
            engine, program, rest = inner
            return engine, [tokens[0], *program], rest
    for engine in ENGINES.values():
        length = engine.detect(tokens)
        if length is not None:
            return engine, tokens[:length], tokens[length:]
    return None


def read_process(argv: Sequence[str]) -> tuple[EngineArgs, Engine | None]:
    """A process's argv, parsed, and the engine it runs."""
    args = parse_engine_argv(argv)
    return args, engine_of(args)


def engine_load(text: str) -> EngineLoad:
    """Requests running and waiting and tokens generated, from any engine's /metrics."""
    from fleet.engines import metrics

    return metrics.engine_load(text, ENGINES.values())


def running_requests(text: str) -> float | None:
    """The running-requests gauge of whichever engine served `text`; None when absent."""
    from fleet.engines import metrics

    return metrics.running_requests(text, ENGINES.values())


def explain_log(text: str) -> tuple[Engine, dict[str, object], EngineReport]:
    """The engine whose log `text` is, what `fleet explain log` prints, and its report.

    A log that no engine recognises is explained as the first engine's (all figures None).
    """
    for engine in ENGINES.values():
        data = engine.explain(text)
        if data is not None:
            return engine, data, engine.read_log(text)
    first = next(iter(ENGINES.values()))
    return first, first.read_log(text).to_explain_json(), first.read_log(text)


def validate_fleet(loaded: LoadedFleet, more: tuple[Rule, ...] = ()) -> list[Problem]:
    """Every problem in desired/: the spec's rules and each engine's own (and `more`: the
    host runtimes' rules, `fleet.runtimes.validate_fleet`)."""
    return _rules.validate_fleet(loaded, ENGINES, more)
