"""What plan says a gateway change costs: nothing behind a front, every alias for the
length of the last in-place restart (from the gateway host's apply journal) without one."""

from __future__ import annotations

import re

import pytest

from fleet.facts.journal import last_gateway_restart
from fleet.gateways.litellm.config import parse_gateway_config
from fleet.plan.actions import ActionKind
from fleet.plan.plan import make_plan
from fleet.spec.models import DesiredFleet
from tests.unit.plan.fakes import gateway_in_sync, in_sync
from tests.unit.render.test_compose import DESIRED, example

FRONT = (
    "gateway: blue/green behind the front (a second proxy with the new config, verified, "
    "then the front switches), no alias unavailable"
)
IN_PLACE = "gateway: restart in place, every alias unavailable"


def no_front() -> DesiredFleet:
    text = (DESIRED / "gateway.yaml").read_text()
    block = re.search(r"^front:.*\n(?:[ #].*\n)*", text, re.MULTILINE)
    assert block is not None
    return example({"gateway.yaml": (block.group(0), "")})


def restart_reasons(fleet: DesiredFleet, seconds: float | None) -> tuple[str, ...]:
    """The restart action's reasons when the live config lacks the alias summarizer."""
    observed = in_sync(fleet)
    live = gateway_in_sync(fleet)
    text = (live.config_text or "").replace("model_name: summarizer", "model_name: summarizer-old")
    gateway = live.model_copy(update={"config_text": text, "config": parse_gateway_config(text)})
    host = observed.hosts["gateway"].model_copy(update={"gateway_restart_seconds": seconds})
    observed = observed.model_copy(
        update={"gateway": gateway, "hosts": {**observed.hosts, "gateway": host}}
    )
    plan = make_plan(fleet, observed)
    (restart,) = [a for a in plan.actions if a.kind is ActionKind.RESTART_GATEWAY]
    return restart.reasons


@pytest.mark.parametrize(
    ("front", "seconds", "cost"),
    [
        (True, 11.8, FRONT),
        (
            False,
            11.8,
            f"{IN_PLACE} for ~12 s (last restart took 11.8 s)",
        ),
        (
            False,
            41.3,
            f"{IN_PLACE} for ~41 s (last restart took 41.3 s)",
        ),
        (False, None, f"{IN_PLACE} while it restarts"),
    ],
    ids=["front", "in-place", "in-place-slow", "in-place-never-measured"],
)
def test_plan_says_what_the_gateway_change_costs(
    front: bool, seconds: float | None, cost: str
) -> None:
    fleet = example() if front else no_front()
    assert restart_reasons(fleet, seconds) == ("load the edited /etc/litellm/config.yaml", cost)


@pytest.mark.parametrize(
    ("journal", "seconds"),
    [
        ("", None),
        ('{"step": "gateway", "how": "blue-green", "seconds": "30.1"}\n', None),
        (
            '{"step": "gateway", "how": "in-place", "seconds": "11.8"}\n'
            '{"step": "gateway", "how": "blue-green", "seconds": "30.1"}\n',
            11.8,
        ),
        (
            '{"step": "gateway", "how": "in-place", "seconds": "9.0"}\nnot json\n'
            '{"step": "gateway", "how": "in-place", "seconds": "12.5"}\n',
            12.5,
        ),
        ('{"step": "gateway", "how": "in-place", "seconds": "soon"}\n', None),
    ],
    ids=["empty", "only-blue-green", "last-in-place", "newest-wins", "unreadable"],
)
def test_the_journal_keeps_the_last_in_place_restart(journal: str, seconds: float | None) -> None:
    assert last_gateway_restart(journal) == seconds
