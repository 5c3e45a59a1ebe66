"""An engine's Prometheus /metrics text: each sample summed over its label sets.

Read by the reconcile loop (its watchdog, and the fleet_seat_requests_* gauges), bench's
speculative-decoding counters and drain, through `fleet.engines.metrics`, which knows
each engine's names. Total: a line that is no sample is skipped, NaN is no figure.
"""

from __future__ import annotations

import re

from fleet.base import CoreModel

_SAMPLE = re.compile(r"^([a-zA-Z_:][\w:]*)(?:\{[^}]*\})?\s+([-+0-9.eE]+|NaN|[+-]Inf)\s*$", re.M)


class EngineLoad(CoreModel):
    """What an engine is doing right now, and how many tokens it has generated so far."""

    running: float | None = None
    waiting: float | None = None
    generated: float | None = None
    kv_usage: float | None = None  # the KV cache in use, 0 to 1

    @property
    def busy(self) -> bool:
        """True when any request runs or waits."""
        return bool((self.running or 0) + (self.waiting or 0))


def sum_samples(text: str) -> dict[str, float]:
    """Each metric name's value summed over its label sets."""
    sums: dict[str, float] = {}
    for name, value in _SAMPLE.findall(text):
        try:
            number = float(value)
        except ValueError:
            continue
        if number == number:  # NaN is no figure
            sums[name] = sums.get(name, 0.0) + number
    return sums
