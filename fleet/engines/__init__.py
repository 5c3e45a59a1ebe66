"""One module per engine, and the seam that picks one.

Each engine module (`vllm`, `llamacpp`) owns everything fleet knows about that engine:
the entrypoint and argv it renders from a seat, reading that argv back from a live
process, its startup log parser, the normalized shape plan compares, the container
health check, and the flags a given image version accepts. Render, diff, health, assemble
and blockers call `engine_for(seat.engine)` (or `engine_of(args)` when observing a
process) and hold no engine knowledge of their own. A third engine is one new module
that satisfies `Engine`, added to `ENGINES`.
"""

from __future__ import annotations

from collections.abc import Sequence

from fleet.engines import llamacpp, vllm
from fleet.engines.base import Engine, Shape, concurrency
from fleet.facts.argv import EngineArgs, parse_engine_argv

__all__ = ["ENGINES", "Engine", "Shape", "concurrency", "engine_for", "engine_of", "read_process"]

ENGINES: dict[str, Engine] = {vllm.NAME: vllm, llamacpp.NAME: llamacpp}
_BY_PROCESS = {"vllm": vllm.NAME, "llama-server": llamacpp.NAME}


def engine_for(name: str) -> Engine:
    """The engine module of a seat's `engine` field."""
    return ENGINES[name]


def engine_of(args: EngineArgs) -> Engine | None:
    """The engine a live process runs, from its argv; None for a process that is no engine."""
    name = _BY_PROCESS.get(args.engine.value) if args.engine else None
    return ENGINES[name] if name else None


def read_process(argv: Sequence[str]) -> tuple[EngineArgs, Engine | None]:
    """A process's argv, parsed, and the engine it runs."""
    args = parse_engine_argv(argv)
    return args, engine_of(args)
