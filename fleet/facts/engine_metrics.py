"""An engine's Prometheus /metrics text: requests running and waiting, tokens generated.

Read by the reconcile loop (its watchdog, and the fleet_seat_requests_* gauges) for vLLM
(`vllm:num_requests_running`, `vllm:num_requests_waiting`, `vllm:generation_tokens_total`)
and llama-server (`llamacpp:requests_processing`, `llamacpp:requests_deferred`,
`llamacpp:tokens_predicted_total`). Values are summed over label sets. Total: a figure
the text does not state is None.
"""

from __future__ import annotations

import re

from fleet.base import CoreModel

_SAMPLE = re.compile(r"^([a-zA-Z_:][\w:]*)(?:\{[^}]*\})?\s+([-+0-9.eE]+|NaN|[+-]Inf)\s*$", re.M)
RUNNING = ("vllm:num_requests_running", "llamacpp:requests_processing")
WAITING = ("vllm:num_requests_waiting", "llamacpp:requests_deferred")
GENERATED = (
    "vllm:generation_tokens_total",
    "vllm:generation_tokens",
    "llamacpp:tokens_predicted_total",
)


class EngineLoad(CoreModel):
    """What an engine is doing right now, and how many tokens it has generated so far."""

    running: float | None = None
    waiting: float | None = None
    generated: float | None = None

    @property
    def busy(self) -> bool:
        """True when any request runs or waits."""
        return bool((self.running or 0) + (self.waiting or 0))


def parse_engine_metrics(text: str) -> EngineLoad:
    """Sum each figure over its label sets; missing figures are None."""
    sums: dict[str, float] = {}
    for name, value in _SAMPLE.findall(text):
        try:
            number = float(value)
        except ValueError:
            continue
        if number == number:  # NaN is no figure
            sums[name] = sums.get(name, 0.0) + number

    def first(names: tuple[str, ...]) -> float | None:
        return next((sums[n] for n in names if n in sums), None)

    return EngineLoad(running=first(RUNNING), waiting=first(WAITING), generated=first(GENERATED))
