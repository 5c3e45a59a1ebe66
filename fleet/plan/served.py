"""Actions for what is served rather than written: copies that are not live, a gateway
whose file is not what it serves, an orphan proxy, a front that does not answer.

Pure; called by `fleet.plan.plan.make_plan`. An apply killed mid-way leaves these
(`fleet.observed.served` finds them); the next plan acts on them, so plan says 0 only when
what is served matches desired/:
- a seat's copy the gateway does not route to goes (`remove-copy`, before that host's
  seats start: a surge may need its port);
- a config file that is not live, a proxy beside the live one, or a URL that does not
  answer: the gateway is restarted (blue/green behind a front: the leftover proxy is
  stopped, a fresh one loads the file, the front switches to it);
- a front that does not answer at all is a blocker for the gateway wave: it cannot switch.
"""

from __future__ import annotations

from fleet.observed.models import Observation
from fleet.observed.served import not_live
from fleet.plan.actions import Action, ActionKind, Blocker, Wave
from fleet.plan.live_port import declared
from fleet.spec.models import SECOND_COPY, DesiredFleet


def copy_actions(
    desired: DesiredFleet, observation: Observation, only: frozenset[str]
) -> list[Action]:
    """`remove-copy` for each running copy of a seat but the live one."""
    as_declared = declared(desired)
    found = []
    where, copies = observation.seat_index(), observation.copies_index()
    for name in sorted(as_declared.seats):
        live = where.get(name)
        if (only and name not in only) or live is None:
            continue
        for host, copy in copies.get(name, ()):
            if copy is live[1] or host is not live[0] or copy.port is None:
                continue
            seat = as_declared.seats[name]
            instance = name if copy.port == seat.port else f"{name}{SECOND_COPY}"
            found.append(
                Action(
                    kind=ActionKind.REMOVE_COPY,
                    target=instance,
                    host=host.name,
                    reasons=(
                        f"a second copy of seat {name} runs on port {copy.port}; the gateway "
                        f"routes to port {live[1].port}",
                    ),
                )
            )
    return found


def gateway_actions(
    desired: DesiredFleet, observation: Observation, actions: list[Action]
) -> tuple[list[Action], list[Blocker]]:
    """A gateway restart when what is served is not the file (unless one is planned), and
    a blocker when a front that must switch does not answer."""
    gateway, live = desired.gateway, observation.gateway
    if gateway is None or live is None or live.served is None or live.config is None:
        return [], []
    served = live.served
    reasons = []
    if not served.url_answers:
        reasons.append(f"the gateway's URL does not answer: {served.url_error}")
    if differs := not_live(live):
        reasons.append(f"{gateway.config_path} is not live: {differs}")
    if served.front_port is not None:
        reasons += [
            f"stop the orphan proxy on :{port}"
            for port in sorted(set(served.proxies) - {served.front_port})
        ]
    planned = any(a.wave is Wave.GATEWAY for a in actions)
    added = []
    if reasons and not planned:
        added.append(
            Action(
                kind=ActionKind.RESTART_GATEWAY,
                target="gateway",
                host=gateway.host,
                reasons=tuple(reasons),
            )
        )
    blockers = []
    if (planned or added) and gateway.front is not None and front_dead(observation):
        blockers.append(
            Blocker(
                target="gateway",
                message=f"the front at {gateway.url} does not answer ({served.url_error}): "
                "the gateway wave cannot switch proxies behind it; start the front first",
            )
        )
    return added, blockers


def front_dead(observation: Observation) -> bool:
    """The gateway's URL refuses connections (its front, nginx, is not running)."""
    live = observation.gateway
    served = live.served if live else None
    return (
        served is not None
        and not served.url_answers
        and not (served.url_error or "").startswith("HTTP ")
    )
