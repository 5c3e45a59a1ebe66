"""Wave 0 of apply: fetch the models a plan says are missing, hosts in parallel.

Called by `reconciler.workflows.apply` before any seat changes. Each fetch runs on its
destination host (`fleet.render.model_fetch` renders every command): the source is listed
again (what is copied is what is checked), the host names the temporary directory (the
one an interrupted fetch left, else a new one `mktemp -d` made), the copy lands there under a
time bound, apply reports its progress (bytes, rate, ETA) from the temporary path's size,
the files are checked (every file and size; sha256 where desired/ declares one), the
provenance is written beside the seat's path, and only then is the copy renamed to it.
A failure leaves the temporary directory for the next apply to resume into, and nothing at
the seat's path. The hub token (`model.token: ${HF_TOKEN}`) goes on stdin.
"""

from __future__ import annotations

import shlex
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import UTC, datetime

from fleet.errors import ApplyError, FleetError
from fleet.facts.model_files import parse_file_list, parse_source_list
from fleet.plan.actions import Action, ActionKind
from fleet.render import model_fetch as render
from fleet.report.models import progress_line
from fleet.spec.model_origin import ModelOrigin, ModelStore
from fleet.spec.models import DesiredFleet
from reconciler.adapters import environment
from reconciler.clock import SYSTEM_CLOCK, Clock
from reconciler.host import HostSession, Sessions
from reconciler.workflows import locks
from reconciler.workflows.seat_wave import Reporter


@dataclass(frozen=True)
class FetchOptions:
    """How long one copy may take, how often its progress is reported, the clock."""

    timeout: float = 6 * 3600.0
    progress_every: float = 10.0
    clock: Clock = SYSTEM_CLOCK


def apply_fetch_wave(
    desired: DesiredFleet,
    connections: Sessions,
    actions: tuple[Action, ...],
    options: FetchOptions,
    reporter: Reporter,
) -> list[str]:
    """Fetch every model of wave 0, one host per thread; what was fetched."""
    by_host: dict[str, list[Action]] = {}
    for action in actions:
        if action.kind is ActionKind.FETCH_MODEL:
            by_host.setdefault(action.host, []).append(action)
    if not by_host:
        return []
    with ThreadPoolExecutor(max_workers=len(by_host)) as pool:
        futures = {
            name: pool.submit(_fetch_host, desired, connections, group, options, reporter)
            for name, group in sorted(by_host.items())
        }
    done, failures = [], []
    for name, future in sorted(futures.items()):
        try:
            done += future.result()
        except FleetError as err:
            failures.append(f"{name}: {err.message}")
    if failures:
        raise ApplyError("model fetch failed: " + "; ".join(failures))
    return done


def _fetch_host(
    desired: DesiredFleet,
    connections: Sessions,
    group: list[Action],
    options: FetchOptions,
    reporter: Reporter,
) -> list[str]:
    conn, host = connections.get(group[0].host), desired.hosts[group[0].host]
    origins = render.fetches(desired)
    done = []
    for action in group:
        origin = origins[(action.host, action.target)][0]
        fetch_model(conn, desired, action.host, action.target, origin, options, reporter)
        locks.record(conn, host, "model-fetched", model=action.target, source=origin.source)
        done.append(f"fetched {action.target} on {action.host}")
    return done


def fetch_model(
    conn: HostSession,
    desired: DesiredFleet,
    host: str,
    path: str,
    origin: ModelOrigin,
    options: FetchOptions,
    reporter: Reporter,
) -> None:
    """Copy, check, record and rename one model on its host; ApplyError on any failure."""
    stores = desired.settings.stores
    expected = _expected(conn, host, origin, stores)
    total = sum(s for s in expected.values() if s is not None)
    reporter.step(f"fetching {path} on {host} from {origin.source}")
    tmp = _temporary(conn, host, path)
    command = render.copy_command(origin, stores, path, tmp)
    _copy(conn, host, (path, tmp), command, origin, total, options, reporter)
    listed = parse_file_list(conn.check(render.landed_listing(path, tmp)))
    landed = {k: f.size for k, f in listed.items()}
    digests = render.expected_digests(origin)
    got = _digests(conn, path, sorted(digests), tmp) if digests else {}
    wrong = render.mismatches(expected or {k: None for k in landed}, landed, digests, got)
    if wrong:
        raise ApplyError(f"{path} on {host} does not match its source: {'; '.join(wrong)}")
    when = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    who = f"fleet apply by {locks.holder().split(' pid ')[0]}"
    mtimes = {k: f.modified for k, f in listed.items() if f.modified}
    text = render.render_provenance(origin, landed, got, who, when, mtimes)
    conn.write_file_atomic(render.provenance_file(path), text)
    conn.check(render.finish_command(path, tmp))
    reporter.step(f"fetched {path} on {host}: {len(landed)} files checked, provenance written")


def _temporary(conn: HostSession, host: str, path: str) -> str:
    """The temporary directory the host names for this fetch (one of `path`'s, or none)."""
    printed = conn.check(render.temporary_command(path))
    found = render.parse_temporary(path, printed)
    if found is None:
        raise ApplyError(f"{host} named no temporary directory for {path}: {printed.strip()!r}")
    return found


def _expected(
    conn: HostSession, host: str, origin: ModelOrigin, stores: dict[str, ModelStore]
) -> dict[str, int | None]:
    """The files the copy must bring: the manifest's, else the source's own listing now
    (the store's, or the hub's file list of the repository at its revision)."""
    manifest: dict[str, int | None] = {k: v.size for k, v in (origin.manifest or {}).items()}
    if origin.kind == "hf" and manifest:
        return manifest
    if origin.kind == "hf":
        stdin = _token(origin.token) + "\n" if origin.token else None
        listed = conn.run(render.hub_listing(origin), stdin=stdin)
    else:
        listed = conn.run(render.source_listing(origin, stores, accept_new=True))
    if listed.exit_status != 0:
        reason = (listed.stderr or listed.stdout).strip().splitlines()
        raise ApplyError(
            f"source {origin.source} is unreachable from {host}: "
            f"{reason[-1] if reason else f'exit {listed.exit_status}'}"
        )
    listing = {k: s if s >= 0 else None for k, s in parse_source_list(listed.stdout).items()}
    return {**listing, **manifest}


def _copy(
    conn: HostSession,
    host: str,
    paths: tuple[str, str],
    command: str,
    origin: ModelOrigin,
    total: int,
    options: FetchOptions,
    reporter: Reporter,
) -> None:
    (path, tmp), bounded = paths, f"timeout {int(options.timeout)} sh -c {shlex.quote(command)}"
    stdin = _token(origin.token) + "\n" if origin.token else None
    start = options.clock.monotonic()
    with ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(conn.run, bounded, stdin=stdin, timeout=options.timeout + 60)
        while not wait([future], timeout=options.progress_every)[0]:
            copied = _copied(conn, tmp)
            elapsed = options.clock.monotonic() - start
            reporter.step(f"{path} on {host}: {progress_line(copied, total, elapsed)}")
    result = future.result()
    if result.exit_status == 124:
        raise ApplyError(
            f"copy of {path} on {host} did not finish within {options.timeout:.0f}s; "
            "the next apply resumes it"
        )
    if result.exit_status != 0:
        lines = (result.stderr or result.stdout).strip().splitlines()
        raise ApplyError(
            f"copy of {path} on {host} failed (exit {result.exit_status}): "
            f"{lines[-1] if lines else 'no output'}; the next apply resumes it"
        )


def _token(reference: str) -> str:
    """The hub token from the controller's environment (it is sent on stdin only)."""
    return environment.resolve(reference, "model.token", "model.token", ApplyError)


def _copied(conn: HostSession, tmp: str) -> int:
    out = conn.run(f"du -sb {shlex.quote(tmp)} 2>/dev/null | cut -f1")
    return int(out.stdout.strip()) if out.stdout.strip().isdigit() else 0


def _digests(conn: HostSession, path: str, files: list[str], tmp: str) -> dict[str, str]:
    return render.parse_digests(conn.check(render.digest_command(path, files, tmp)), path)
