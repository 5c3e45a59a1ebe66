"""Reading an engine's /metrics with the names its engine module declares (`METRICS`).

`engine_load` gives the reconcile loop and `fleet status` requests running and waiting,
tokens generated and the KV cache in use;
`running_requests` is what drain waits on; `named_counts` reads the speculative counters
of an engine that exports them under `MetricNames`' names. Where the engine is not known
(a container being removed), the engine whose names the text carries is used. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable

from fleet.engines.base import Engine, MetricNames
from fleet.facts.engine_metrics import EngineLoad, sum_samples


def names_in(sums: dict[str, float], engines: Iterable[Engine]) -> MetricNames | None:
    """The metric names of the engine whose running gauge the samples carry."""
    return next((e.METRICS for e in engines if any(n in sums for n in e.METRICS.running)), None)


def engine_load(text: str, engines: Iterable[Engine]) -> EngineLoad:
    """Running, waiting and generated, by the names of the engine that served the text."""
    sums = sum_samples(text)
    names = names_in(sums, engines)
    if names is None:
        return EngineLoad()

    def first(candidates: tuple[str, ...]) -> float | None:
        return next((sums[n] for n in candidates if n in sums), None)

    return EngineLoad(
        running=first(names.running),
        waiting=first(names.waiting),
        generated=first(names.generated),
        kv_usage=first(names.kv_usage),
    )


def running_requests(text: str, engines: Iterable[Engine]) -> float | None:
    """The running-requests gauge summed over models; None when no engine's gauge is there."""
    return engine_load(text, engines).running


def named_counts(sums: dict[str, float], names: MetricNames) -> dict[str, float]:
    """`accepted`, `draft_tokens` and `drafts` read under the names `names` gives.

    A counter is read under its name or without its `_total` suffix (older clients).
    """
    wanted = {
        "accepted": names.spec_accepted,
        "draft_tokens": names.spec_draft_tokens,
        "drafts": names.spec_drafts,
    }
    found: dict[str, float] = {}
    for key, name in wanted.items():
        if name is None:
            continue
        value = sums.get(name, sums.get(name.removesuffix("_total")))
        if value is not None:
            found[key] = value
    return found
