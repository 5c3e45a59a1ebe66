"""Whether a seat's speculative decoding can start: its drafter is on the host, and a
method that drafts with the model's own MTP layers has a model that carries them.

Called by `fleet.plan.blockers` for the seats a plan creates or replaces. Whether a model
has MTP layers comes from config.json (`ModelFacts.mtp_layers`), else the seat's engine
tells from the model family and architecture (`Engine.lacks_mtp_layers`: which methods
draft with the model's own layers, and the families it drafts for); when neither tells,
nothing is refused. Pure.
"""

from __future__ import annotations

from collections.abc import Iterator

from fleet.engines import engine_for
from fleet.observed.models import ObservedHost
from fleet.plan import predict
from fleet.plan.actions import Blocker
from fleet.spec.models import Seat


def speculative_blockers(host: ObservedHost, seat: Seat) -> Iterator[Blocker]:
    """A drafter that is not on the host, or an MTP method on a model with no MTP layers."""
    spec = seat.speculative
    if spec is None:
        return
    if spec.draft_model:
        if spec.draft_model.rstrip("/") in host.missing_paths:
            yield Blocker(
                target=seat.name,
                message=f"draft model {spec.draft_model} ({spec.method}) does not exist on "
                f"{seat.host}",
            )
        return
    info = host.models.get(seat.model.rstrip("/"))
    if info is None or info.config_error:
        return
    facts = predict.model_facts(info)
    types = (info.model_type, facts.text_model_type if facts else None)
    layers = facts.mtp_layers if facts else None
    engine = engine_for(seat.engine)
    if engine.lacks_mtp_layers(spec.method, types, info.architecture, layers):
        kind = ", ".join(t for t in (*types, info.architecture) if t)
        yield Blocker(
            target=seat.name,
            message=f"speculative method {spec.method} drafts with the model's own MTP "
            f"layers, but config.json of {seat.model} ({kind}) has none: drop speculative, "
            "or draft with a separate model (eagle3, draft_model) named in draft_model",
        )
