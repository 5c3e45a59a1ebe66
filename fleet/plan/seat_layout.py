"""The KV layout of a seat's configuration, or of the configuration a startup log ran.

Called by `fleet.plan.predict` (a seat's estimate), `fleet explain log --model` and the
estimate report (`log_layout`). It reads what changes the layout off the seat (or log)
and hands plain values to the engine-neutral model (`fleet.facts.kv_estimate.kv_layout`):
the KV dtype, tensor and pipeline parallel sizes, a drafter's layers and speculative
tokens, `--max-num-batched-tokens`, `--mamba-ssm-cache-dtype`, and the grouping rule of
the image's vLLM (before 0.12 a kind's groups always had the fewest layers of a kind;
vLLM PR #29303 groups by the most when under 1.5x the fewest). Pure.
"""

from __future__ import annotations

from fleet.engines.report import EngineReport
from fleet.facts.kv_estimate import (
    BATCHED_TOKENS,
    KvLayout,
    drafter_layers,
    flag_value,
    kv_dtype,
    kv_layout,
    pipeline_parallel,
)
from fleet.facts.model_config import ModelFacts
from fleet.spec.images import parse_image
from fleet.spec.models import Seat

NEAR_MOST_SINCE = (0, 12, 0)  # the first vLLM release grouping by the most layers (1.5x)


def seat_layout(seat: Seat, facts: ModelFacts, draft: ModelFacts | None) -> KvLayout | None:
    """The layout the seat's engine will build; None if config.json is too thin."""
    dtype, tp = kv_dtype(seat.extra_args), len(seat.gpus)
    spec = seat.speculative
    extra = (
        drafter_layers(facts, spec.method, spec.draft_model is not None, draft, dtype, tp)
        if spec
        else 0
    )
    batched = flag_value(seat.extra_args, "--max-num-batched-tokens") or ""
    return kv_layout(
        with_state_dtype(facts, flag_value(seat.extra_args, "--mamba-ssm-cache-dtype")),
        dtype,
        tp,
        pipeline_parallel(seat.extra_args),
        extra,
        spec.num_tokens if spec else 0,
        int(batched) if batched.isdigit() else BATCHED_TOKENS,
        fewest_groups=_before_near_most(parse_image(seat.image).version),
    )


def log_layout(facts: ModelFacts, report: EngineReport) -> KvLayout | None:
    """The layout plan would predict for the configuration a startup log ran (its KV dtype,
    parallel sizes and speculative decoding; a drafter's config is not known from a log)."""
    dtype = report.kv_cache_dtype or "auto"
    tp, pp = report.tensor_parallel_size or 1, report.pipeline_parallel_size or 1
    spec = report.speculative
    method, k = (spec.method, spec.num_tokens or 0) if spec else (None, 0)
    extra = drafter_layers(facts, method, bool(spec and spec.draft_model), None, dtype, tp)
    version = tuple(int(p) for p in (report.version or "").split(".")[:3] if p.isdigit())
    fewest = _before_near_most(version if len(version) == 3 else None)
    return kv_layout(facts, dtype, tp, pp, extra, k, fewest_groups=fewest)


def with_state_dtype(facts: ModelFacts, dtype: str | None) -> ModelFacts:
    """The facts with a state's recurrent dtype as `--mamba-ssm-cache-dtype` sets it."""
    state = facts.attention.state
    if state is None or dtype in (None, "", "auto"):
        return facts
    attention = facts.attention.model_copy(
        update={"state": state.model_copy(update={"ssm_dtype": str(dtype).lower()})}
    )
    return facts.model_copy(update={"attention": attention})


def _before_near_most(version: tuple[int, ...] | None) -> bool:
    return version is not None and version < NEAR_MOST_SINCE
