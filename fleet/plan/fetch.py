"""Model fetches: a model a seat declares the origin of, absent on its host, is fetched
in wave 0 before any seat starts; plan shows what it copies and the room it lands in.

Called by `fleet.plan.plan`. One action per (host, model path), whichever seats share
it: `+ model Qwen3-32B on tower` with `65.5 GB from store nas, 412 GB free on /models`.
Its size rests on the facts apply's check uses: the store's listing as the host saw it
(`ObservedHost.sources`), a manifest's sizes, or the hub's own file list of the
repository at its revision, which plan reads as apply does (from the host) unless the
origin needs a token: plan holds no secret, so it says that the hub's list, and with it
the size and the room, is first read at apply. What an interrupted copy already left in
the temporary directory counts as copied. Blockers: the source is unreachable from the
host (the store, the hub, or `hf` not installed there), or the models root's filesystem
lacks the room (both numbers named), or its free space could not be read. A store whose
host key the host has never seen (and no `known_hosts` pinned) is no blocker: plan writes
no key, apply records it first (accept-new), and plan says that the listing waits for it.
"""

from __future__ import annotations

from collections.abc import Iterator

from fleet.facts.model_files import SourceListing
from fleet.observed.models import Observation, ObservedHost
from fleet.plan.actions import Action, ActionKind, Blocker
from fleet.render.model_fetch import fetches, hub_listed_in_plan
from fleet.spec.model_origin import ModelOrigin
from fleet.spec.models import DesiredFleet
from fleet.units import human_bytes


def fetch_actions(
    desired: DesiredFleet, observation: Observation, only_seats: frozenset[str] = frozenset()
) -> list[Action]:
    """A fetch for every declared model its host lacks."""
    actions = []
    for (host_name, path), (origin, seats) in sorted(fetches(desired).items()):
        host = observation.hosts.get(host_name)
        if only_seats and not any(s.name in only_seats for s in seats):
            continue
        if host is None or not host.reachable or path not in host.missing_paths:
            continue
        reasons = (
            _summary(desired, host, path, origin),
            f"for seat{'s' if len(seats) > 1 else ''} {', '.join(s.name for s in seats)}",
        )
        actions.append(
            Action(kind=ActionKind.FETCH_MODEL, target=path, host=host_name, reasons=reasons)
        )
    return actions


def source_size(host: ObservedHost, path: str, origin: ModelOrigin) -> int | None:
    """Bytes the fetch brings: the source's listing, else the manifest's sizes."""
    listing = host.sources.get(path)
    if listing is not None and listing.size is not None:
        return listing.size
    sizes = [entry.size for entry in (origin.manifest or {}).values()]
    return sum(s for s in sizes if s is not None) if sizes and None not in sizes else None


def _needed(host: ObservedHost, path: str, origin: ModelOrigin) -> int | None:
    size = source_size(host, path, origin)
    listing = host.sources.get(path)
    copied = listing.partial_bytes if listing is not None else 0
    return None if size is None else max(size - copied, 0)


def _from(desired: DesiredFleet, origin: ModelOrigin) -> str:
    if origin.kind != "hf":
        return f"from store {origin.store} ({origin.location})"
    hub = f"from the hub ({origin.location}@{origin.pinned_revision or 'main'})"
    if origin.manifest or hub_listed_in_plan(origin):
        return hub
    return f"{hub}: its file list needs the token, so size and room are checked at apply"


def _first_key(desired: DesiredFleet, origin: ModelOrigin, listing: SourceListing) -> bool:
    """The store could not be listed only because the host has never seen its key, which
    a fetch records (no `known_hosts` pinned: accept-new) and plan, writing nothing,
    does not."""
    store = desired.settings.stores.get(origin.store or "")
    return listing.host_key_unknown and store is not None and not store.known_hosts


def _summary(desired: DesiredFleet, host: ObservedHost, path: str, origin: ModelOrigin) -> str:
    listing = host.sources.get(path)
    if listing is not None and _first_key(desired, origin, listing):
        return (
            f"{_from(desired, origin)}: its host key is not yet known on {host.name}, which "
            "apply records (accept-new) before it lists the store: size and room are "
            "checked then"
        )
    size = source_size(host, path, origin)
    amount = human_bytes(size) if size is not None else "size unknown"
    listing = host.sources.get(path)
    resumed = (
        f" (resumes: {human_bytes(listing.partial_bytes)} already copied)"
        if listing is not None and listing.partial_bytes
        else ""
    )
    room = (
        f"{human_bytes(host.disk.available)} free on {host.disk.mount}"
        if host.disk is not None
        else "free space unknown"
    )
    return f"{amount} {_from(desired, origin)}{resumed}, {room}"


def fetch_blockers(
    desired: DesiredFleet, observation: Observation, actions: list[Action]
) -> Iterator[Blocker]:
    """Why a planned fetch cannot succeed: its source, or the room it needs (the fetches
    to one host counted together, in plan order)."""
    plans = fetches(desired)
    taken: dict[str, int] = {}  # host -> bytes the fetches before this one need there
    for action in actions:
        if action.kind is not ActionKind.FETCH_MODEL:
            continue
        host = observation.hosts[action.host]
        origin = plans[(action.host, action.target)][0]
        listing = host.sources.get(action.target)
        if listing is not None and _first_key(desired, origin, listing):
            pass  # apply records the key and lists the store then (`_summary` says so)
        elif listing is not None and listing.error is not None:
            yield _blocker(
                action, f"source {origin.source} is unreachable from {action.host}: {listing.error}"
            )
            continue
        if host.disk is None:
            yield _blocker(action, f"free space on {action.host}'s models root could not be read")
            continue
        needed = _needed(host, action.target, origin) or 0
        before = taken.get(action.host, 0)
        taken[action.host] = before + needed
        if before + needed > host.disk.available:
            others = f" ({human_bytes(before)} more for the fetches before it)" if before else ""
            yield _blocker(
                action,
                f"needs {human_bytes(needed)} on {action.host}{others} but {host.disk.mount} "
                f"has {human_bytes(host.disk.available)} free ({before + needed} > "
                f"{host.disk.available} bytes)",
            )


def _blocker(action: Action, message: str) -> Blocker:
    return Blocker(target=action.target, message=message)
