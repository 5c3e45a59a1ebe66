"""`fleet models`: every model directory and GGUF file on every host, and what prune frees.

Pure: called by `reconciler.workflows.models` with desired/ and an observation. A row
says where a model is, its size, the seats that use it (`fleet.observed.model_use`), its
lineage (the `.PROVENANCE.txt` beside it, as the inventory reads it) and when its files
were last read (their atime: under `relatime` a day's resolution at best). Prune takes
the unused models of the hosts asked for, last read before the cut-off (`--older-than`),
and only direct entries of the host's `models_root`: never a model a seat of desired/ or
a container on the host uses, never anything outside the root, never a hidden entry but an
abandoned fetch's temporary directory, `.<name>.partial.<random>` or an older fleet's
`.<name>.partial` (one no seat's fetch in desired/ would resume; its last read unknown,
so never with `--older-than`). Also the progress line of a fetch:
bytes, rate, ETA.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from fleet.base import CoreModel
from fleet.observed.model_use import host_users
from fleet.observed.models import ModelInfo, Observation, ObservedHost
from fleet.render.model_fetch import PARTIAL_SUFFIX, fetches, is_temporary_of
from fleet.spec.models import DesiredFleet
from fleet.units import human_bytes

# a fetch's temporary directory: `.<name>.partial.<random>` (an older fleet's: no random part)
PARTIAL_NAME = re.compile(r"\.[^/]+" + re.escape(PARTIAL_SUFFIX) + r"(\.[A-Za-z0-9]{10})?")


class ModelRow(CoreModel):
    """One model on one host."""

    host: str
    path: str
    size_bytes: int | None
    seats: tuple[str, ...]
    lineage: str | None
    last_used: float | None  # seconds since the epoch; None: not read

    @property
    def unused(self) -> bool:
        """Nothing uses it."""
        return not self.seats


def model_rows(desired: DesiredFleet, observation: Observation) -> list[ModelRow]:
    """A row per model on every reachable host, by host and path."""
    rows = []
    by_host = desired.seats_by_host()
    for host in sorted(observation.hosts.values(), key=lambda h: h.name):
        on_host = by_host.get(host.name, [])
        for path, info in sorted(host.models.items()):
            rows.append(
                ModelRow(
                    host=host.name,
                    path=path,
                    size_bytes=info.size_bytes,
                    seats=tuple(host_users(on_host, host, path)),
                    lineage=_lineage(info),
                    last_used=_last_read(info),
                )
            )
    return rows


def _lineage(info: ModelInfo) -> str | None:
    return "; ".join(f"{k}: {v}" for k, v in sorted(info.lineage.items())) or None


def _last_read(info: ModelInfo) -> float | None:
    times = [f.accessed for f in (info.files or {}).values() if f.accessed is not None]
    return max(times) if times else None


def within_root(root: str, path: str) -> bool:
    """A direct, visible entry of the models root (what prune may ever remove)."""
    parent, _, name = path.rstrip("/").rpartition("/")
    visible = bool(name) and not name.startswith(".") and ".." not in path
    return visible and parent == root.rstrip("/")


def prune_candidates(
    desired: DesiredFleet,
    observation: Observation,
    *,
    now: float,
    hosts: frozenset[str] = frozenset(),
    older_than: float | None = None,
) -> list[ModelRow]:
    """The unused models prune would remove: of `hosts` (all when empty), inside each
    host's models root, last read more than `older_than` seconds before `now`."""
    chosen = []
    for row in model_rows(desired, observation):
        spec = desired.hosts.get(row.host)
        if spec is None or not row.unused or (hosts and row.host not in hosts):
            continue
        if not within_root(spec.models_root, row.path):
            continue
        if older_than is not None and (row.last_used is None or now - row.last_used < older_than):
            continue
        chosen.append(row)
    if older_than is None:
        for host in sorted(observation.hosts.values(), key=lambda h: h.name):
            if host.name in desired.hosts and (not hosts or host.name in hosts):
                chosen += abandoned_partials(desired, host)
    return chosen


def abandoned_partials(desired: DesiredFleet, host: ObservedHost) -> list[ModelRow]:
    """The host's `.<name>.partial` entries of its models root that no seat's fetch in
    desired/ would resume and that nothing loads: what the host reported as a partial is
    taken only if its name is a fetch's temporary name and no path in use is it, inside
    it or holds it (a desired or running seat's model or drafter, an installed model)."""
    root = desired.hosts[host.name].models_root.rstrip("/")
    fetched = [path for (name, path) in fetches(desired) if name == host.name]
    used = _paths_in_use(desired, host)
    return [
        ModelRow(host=host.name, path=path, size_bytes=size, seats=(), lineage=None, last_used=None)
        for path, size in sorted(host.partials.items())
        if not any(is_temporary_of(path, model) for model in fetched)
        and path.rpartition("/")[0] == root
        and PARTIAL_NAME.fullmatch(path.rpartition("/")[2])
        and not any(_overlaps(path, other) for other in used)
    ]


def _paths_in_use(desired: DesiredFleet, host: ObservedHost) -> set[str]:
    """Paths a seat on this host loads (desired/ or running) and the installed models."""
    seats = desired.seats_on(host.name)
    used = {s.model for s in seats}
    used |= {
        s.speculative.draft_model for s in seats if s.speculative and s.speculative.draft_model
    }
    used |= {s.model for s in host.seats if s.model}
    return {p.rstrip("/") for p in used | set(host.models) if p.startswith("/")}


def _overlaps(path: str, other: str) -> bool:
    """The same path, or one inside the other."""
    return path == other or other.startswith(path + "/") or path.startswith(other + "/")


def row_line(row: ModelRow) -> str:
    """`tower  /models/X  65.5 GB  seats: sec  last read 2026-11-02  lineage: ...`."""
    size = human_bytes(row.size_bytes) if row.size_bytes is not None else "?"
    seats = ", ".join(row.seats) if row.seats else "unused"
    read = (
        datetime.fromtimestamp(row.last_used, UTC).strftime("%Y-%m-%d")
        if row.last_used is not None
        else "unknown"
    )
    lineage = f"  lineage: {_shown(row.lineage)}" if row.lineage else ""
    return f"{row.host}  {_shown(row.path)}  {size}  seats: {seats}  last read {read}{lineage}"


# what would end or break a terminal's line (a host names its directories as it likes)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _shown(text: str) -> str:
    """The text on one line: every control character as its escape (`\\n`, `\\x1b`)."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


def progress_line(copied: int, total: int, seconds: float) -> str:
    """`12.0 GB of 65.5 GB (18%), 110 MB/s, ETA 8m05s` (what is known of it)."""
    rate = copied / seconds if seconds > 0 else 0.0
    if total <= 0:
        return f"{human_bytes(copied)} copied, {human_bytes(int(rate))}/s"
    share = min(copied * 100 // total, 100)
    left = max(total - copied, 0)
    eta = f", ETA {_duration(left / rate)}" if rate > 0 else ""
    return (
        f"{human_bytes(copied)} of {human_bytes(total)} ({share}%), {human_bytes(int(rate))}/s{eta}"
    )


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


def parse_age(text: str) -> float:
    """`30d`, `12h`, `90m`, `45s` -> seconds; ValueError otherwise."""
    units = {"d": 86400, "h": 3600, "m": 60, "s": 1}
    if len(text) < 2 or text[-1] not in units or not text[:-1].isdigit():
        raise ValueError(f"--older-than takes a number and d, h, m or s (30d), not {text!r}")
    return int(text[:-1]) * units[text[-1]]
