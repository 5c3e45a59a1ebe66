"""A saved plan's fingerprint: which changes of the live fleet make it stale.

A plan's predictions and blockers rest on what observation read of each model directory
(config.json, size on disk); a change there between plan and apply moves the plan, a
change to a model no action uses does not.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fleet.observed.models import Observation
from fleet.plan.fingerprint import moved
from fleet.plan.plan import make_plan
from tests.unit.plan.fakes import in_sync
from tests.unit.plan.models import with_models
from tests.unit.plan.test_plan import replace_seat
from tests.unit.render.test_compose import example

SEC_MODEL = "/models/Qwen3.5-27B"  # the model of seat sec on tower
OTHER_MODEL = "/models/TinyLlama-1.1B-Chat-FP8"  # coder's, which the plan leaves alone


def sec_to_create() -> Observation:
    """The example fleet observed with its models' facts, seat sec's container gone."""
    return replace_seat(with_models(in_sync(example()), parsed=True), "tower", "sec", None)


def edit_model(path: str, **update: object) -> Callable[[Observation], Observation]:
    def edit(observation: Observation) -> Observation:
        tower = observation.hosts["tower"]
        models = {**tower.models, path: tower.models[path].model_copy(update=update)}
        hosts = {**observation.hosts, "tower": tower.model_copy(update={"models": models})}
        return observation.model_copy(update={"hosts": hosts})

    return edit


def remove_model(path: str) -> Callable[[Observation], Observation]:
    def edit(observation: Observation) -> Observation:
        tower = observation.hosts["tower"]
        update = {"missing_paths": (*tower.missing_paths, path)}
        hosts = {**observation.hosts, "tower": tower.model_copy(update=update)}
        return observation.model_copy(update={"hosts": hosts})

    return edit


@pytest.mark.parametrize(
    ("change", "stale"),
    [
        (edit_model(SEC_MODEL, max_position_embeddings=32768), [f"host/tower/model/{SEC_MODEL}"]),
        (edit_model(SEC_MODEL, size_bytes=1), [f"host/tower/model/{SEC_MODEL}"]),
        (remove_model(SEC_MODEL), [f"host/tower/model/{SEC_MODEL}"]),
        (edit_model(OTHER_MODEL, max_position_embeddings=1024), []),
        (lambda observation: observation, []),
    ],
    ids=["config-json", "size-on-disk", "directory-gone", "unused-model", "nothing"],
)
def test_a_change_to_a_model_the_plan_uses_makes_it_stale(
    change: Callable[[Observation], Observation], stale: list[str]
) -> None:
    fleet, before = example(), sec_to_create()
    saved = make_plan(fleet, before).fingerprint
    assert saved[f"host/tower/model/{SEC_MODEL}"].startswith("present ")
    now = make_plan(fleet, change(before)).fingerprint
    assert [line.split(":")[0] for line in moved(saved, now)] == stale
