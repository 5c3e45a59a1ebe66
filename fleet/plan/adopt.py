"""Adoption: a container fleet did not create, whose live argv, image, ports, GPUs and model
match its seat, counts as in sync, with no restart.

Called by `fleet.plan.plan` for a seat with no instance fleet runs (`Runtime.MANAGED_BY`).
The match is the hand-made container `fleet import` would name after the seat (its
compose service, else its name) on the seat's host; the compared shape is the one of any
seat, the spec-hash label aside (a hand-made container has none). The first real change
replaces it under fleet's project: apply stops it, starts the seat, and removes it only
once the seat is healthy (rollback starts it again).
"""

from __future__ import annotations

from fleet.facts.instance import Instance
from fleet.observed.models import Observation
from fleet.plan.actions import Action, ActionKind, NoOp
from fleet.plan.diff import desired_shape, diff_seat, observed_shape
from fleet.runtimes import runtime_for
from fleet.spec.models import DesiredFleet


def pinned_to(container: Instance, image: str) -> bool:
    """True when `image` is the container's tag pinned to one of its registry digests
    (import writes `repo:tag@sha256:...`; a container run by hand shows `repo:tag`)."""
    reference, _, digest = image.partition("@")
    repository = reference.rsplit(":", 1)[0] if ":" in reference.rsplit("/", 1)[-1] else reference
    wanted = f"{repository}@{digest}"
    return bool(digest) and container.image == reference and wanted in container.repo_digests


def adopt(
    desired: DesiredFleet, observation: Observation, name: str
) -> tuple[list[Action], NoOp | None] | None:
    """The seat's action or no-op when a hand-made container can be adopted; else None."""
    seat = desired.seats[name]
    host = observation.hosts.get(seat.host)
    live = host.adoptable(name) if host is not None else None
    if live is None:
        return None
    wanted = desired_shape(seat, desired.hosts[seat.host])
    running = {**observed_shape(live), "spec_hash": wanted["spec_hash"], "definition": None}
    if pinned_to(live.instance, seat.image):
        running["image"] = seat.image
    changes = diff_seat(wanted, running)
    reasons = [] if live.instance.running else [f"container is {live.instance.state}"]
    if not changes and not reasons:
        return [], NoOp(
            target=name,
            reason=f"adopted (not yet under {runtime_for(desired.hosts[seat.host]).MANAGED_BY}): "
            f"container {live.instance.name} runs what desired/ says",
        )
    reasons = [f"takes over hand-made container {live.instance.name}", *reasons]
    reasons += [f"{c.field} changes" for c in changes]
    action = Action(
        kind=ActionKind.REPLACE_SEAT,
        target=name,
        host=seat.host,
        reasons=tuple(reasons),
        changes=tuple(changes),
        adopts=live.instance.name,
    )
    return [action], None
