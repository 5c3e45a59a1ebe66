"""Which seats use each model on a host, and the findings about models on disk.

Pure: called by `fleet.observed.findings.find_issues` and by `fleet.report.models`
(`fleet models`). A model is used when a seat of desired/ on its host loads it (or drafts
with it) or a seat container there, running or not, was started on it. Findings: a model
nothing uses is `unused-model` (info: `fleet models prune` can free it); a model whose
files no longer match the list fleet recorded when it fetched it (a file gone, added,
resized, or written since — its mtime differs — and, where a digest was recorded, hashing
it again gives another) is `model-changed` (a warning). Every observation compares sizes
and mtimes, and re-hashes only the files whose size or mtime moved (`to_rehash`): hashing
every file of every model at every observe would read all the weights each time.
`fleet models --verify` re-hashes every file with a recorded digest, for what a same-size,
same-mtime corruption leaves.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from fleet.base import Severity
from fleet.observed.models import ModelInfo, Observation, ObservedHost
from fleet.spec.models import DesiredFleet, Seat


def desired_users(on_host: Iterable[Seat], path: str) -> list[str]:
    """Seats of desired/ on a host (`on_host`: `DesiredFleet.seats_on`, or one entry of
    `seats_by_host` when asking host after host) that load or draft with the model at `path`."""
    wanted = path.rstrip("/")
    users = []
    for seat in on_host:
        drafter = seat.speculative.draft_model if seat.speculative else None
        if wanted in {seat.model.rstrip("/"), (drafter or "").rstrip("/")}:
            users.append(seat.name)
    return users


def live_users(host: ObservedHost, path: str) -> list[str]:
    """Seat containers on the host started on the model at `path` (running or not)."""
    wanted = path.rstrip("/")
    return sorted(s.name for s in host.seats if (s.model or "").rstrip("/") == wanted)


def users(desired: DesiredFleet, host: ObservedHost, path: str) -> list[str]:
    """Everything that uses the model: desired/ seats and live seat containers."""
    return host_users(desired.seats_on(host.name), host, path)


def host_users(on_host: Iterable[Seat], host: ObservedHost, path: str) -> list[str]:
    """`users`, given the desired/ seats on the host."""
    return sorted(set(desired_users(on_host, path)) | set(live_users(host, path)))


def to_rehash(info: ModelInfo, *, every: bool = False) -> list[str]:
    """Files of a fetched model to hash again: those with a recorded digest whose size or
    mtime moved since the fetch (all of those with a digest when `every`)."""
    if info.recorded is None or info.files is None:
        return []
    chosen = []
    for name, recorded in sorted(info.recorded.items()):
        now = info.files.get(name)
        if recorded.sha256 is None or now is None:
            continue
        moved = now.size != recorded.size or (
            recorded.mtime is not None and now.modified not in (None, recorded.mtime)
        )
        if every or moved:
            chosen.append(name)
    return chosen


def changes(info: ModelInfo) -> list[str]:
    """How a fetched model's files differ from what fleet recorded (empty: they match)."""
    if info.recorded is None or info.files is None:
        return []
    found = []
    for name in sorted(set(info.recorded) | set(info.files)):
        label = name or "the file"
        recorded, now = info.recorded.get(name), info.files.get(name)
        if now is None:
            found.append(f"{label} is gone")
        elif recorded is None:
            found.append(f"{label} was added")
        elif recorded.size != now.size:
            found.append(f"{label} is {now.size} bytes, was {recorded.size}")
        elif (digest := info.digests.get(name)) is not None and recorded.sha256 is not None:
            if digest != recorded.sha256:
                found.append(f"{label}: sha256 {digest[:12]}..., was {recorded.sha256[:12]}...")
        elif recorded.mtime is not None and now.modified not in (None, recorded.mtime):
            found.append(f"{label} was written since (mtime {now.modified}, was {recorded.mtime})")
    return found


def model_findings(desired: DesiredFleet, observation: Observation) -> Iterator[tuple[str, ...]]:
    """(kind, target, message, severity) of each unused or changed model."""
    by_host = desired.seats_by_host()
    for host in sorted(observation.hosts.values(), key=lambda h: h.name):
        if not host.reachable:
            continue
        on_host = by_host.get(host.name, [])
        for path, info in sorted(host.models.items()):
            target = f"{host.name}:{path}"
            if not host_users(on_host, host, path):
                size = f"{info.size_bytes} bytes" if info.size_bytes is not None else "size unknown"
                yield (
                    "unused-model",
                    target,
                    f"no seat of desired/ or container uses it ({size}); "
                    "`fleet models prune` frees it",
                    Severity.INFO.value,
                )
            if found := changes(info):
                yield (
                    "model-changed",
                    target,
                    "changed since fleet fetched it: " + "; ".join(found),
                    Severity.WARNING.value,
                )
