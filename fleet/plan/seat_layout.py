"""The KV layout of a seat's configuration, or of the configuration a startup log ran.

Called by `fleet.plan.predict` (a seat's estimate), `fleet explain log --model` and the
estimate report (`log_layout`). The seat's engine reads what changes the layout off the
seat (`Engine.kv_settings`: the KV dtype, pipeline parallel size, prefill chunk, a state's
dtype, and the grouping rule of the image's release); with the tensor parallel size, a
drafter's layers and speculative tokens they go plain to the engine-neutral model
(`fleet.facts.kv_estimate.kv_layout`). Pure.
"""

from __future__ import annotations

from fleet.engines import Engine, engine_for
from fleet.engines.report import EngineReport
from fleet.facts.kv_estimate import BATCHED_TOKENS, KvLayout, drafter_layers, kv_layout
from fleet.facts.model_config import ModelFacts
from fleet.spec.images import parse_image
from fleet.spec.models import Seat


def seat_layout(seat: Seat, facts: ModelFacts, draft: ModelFacts | None) -> KvLayout | None:
    """The layout the seat's engine will build; None if config.json is too thin."""
    engine = engine_for(seat.engine)
    settings = engine.kv_settings(seat.extra_args, parse_image(seat.image).version)
    dtype, tp = settings.dtype, seat.tp_size
    spec = seat.speculative
    extra = (
        drafter_layers(facts, spec.method, spec.draft_model is not None, draft, dtype, tp)
        if spec
        else 0
    )
    batched = settings.batched_tokens
    return kv_layout(
        with_state_dtype(facts, settings.state_dtype),
        dtype,
        tp,
        settings.pipeline_parallel,
        extra,
        spec.num_tokens if spec else 0,
        BATCHED_TOKENS if batched is None else batched,
        fewest_groups=settings.fewest_groups,
    )


def log_layout(facts: ModelFacts, report: EngineReport, engine: Engine) -> KvLayout | None:
    """The layout plan would predict for the configuration a startup log of `engine` ran (its
    KV dtype, parallel sizes and speculative decoding; a drafter's config is not known from
    a log), grouped by the rule of the release the log names."""
    dtype = report.kv_cache_dtype or "auto"
    tp, pp = report.tensor_parallel_size or 1, report.pipeline_parallel_size or 1
    spec = report.speculative
    method, k = (spec.method, spec.num_tokens or 0) if spec else (None, 0)
    extra = drafter_layers(facts, method, bool(spec and spec.draft_model), None, dtype, tp)
    version = tuple(int(p) for p in (report.version or "").split(".")[:3] if p.isdigit())
    fewest = engine.kv_settings((), version if len(version) == 3 else None).fewest_groups
    return kv_layout(facts, dtype, tp, pp, extra, k, fewest_groups=fewest)


def with_state_dtype(facts: ModelFacts, dtype: str | None) -> ModelFacts:
    """The facts with a state's recurrent dtype as the engine was told it."""
    state = facts.attention.state
    if state is None or dtype in (None, "", "auto"):
        return facts
    attention = facts.attention.model_copy(
        update={"state": state.model_copy(update={"ssm_dtype": str(dtype).lower()})}
    )
    return facts.model_copy(update={"attention": attention})
