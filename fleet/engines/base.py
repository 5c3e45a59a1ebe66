"""The shape every engine module has, and what all engines share (concurrency)."""

from __future__ import annotations

from typing import Any, Protocol

from fleet.facts.argv import EngineArgs
from fleet.facts.vllm_log import EngineReport
from fleet.spec.models import Seat

Shape = dict[str, Any]


class Engine(Protocol):
    """What fleet needs from an engine module (a module satisfies it)."""

    NAME: str
    COMPARED: tuple[str, ...]

    def entrypoint(self, seat: Seat) -> list[str]: ...

    def render_args(self, seat: Seat) -> list[str]: ...

    def healthcheck(self, seat: Seat) -> list[str]: ...

    def desired_shape(self, seat: Seat) -> Shape: ...

    def observed_shape(self, args: EngineArgs) -> Shape: ...

    def read_log(self, text: str) -> EngineReport: ...

    def unsupported_flags(self, seat: Seat, version: tuple[int, int, int]) -> list[str]: ...


def concurrency(kv_tokens: int | None, context: int | None) -> float | None:
    """KV-cache tokens / context: how many full-context requests fit at once."""
    if not kv_tokens or not context or context <= 0:
        return None
    return kv_tokens / context
