"""Findings: noteworthy facts that are not changes (dead aliases, floating tags, ...).

`find_issues` is pure: it reads desired/ (for bands and intent) and an `Observation`, and
returns findings sorted by kind and target. Shown by `fleet inventory`, `check` and `plan`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from enum import StrEnum

from fleet.base import CoreModel, Severity
from fleet.observed.client_findings import client_findings
from fleet.observed.model_use import model_findings
from fleet.observed.models import Observation, ObservedHost, ObservedSeat
from fleet.observed.served import served_findings
from fleet.runtimes import RUNTIMES, runtime_for
from fleet.secrets import redact, redact_url
from fleet.spec.images import parse_image
from fleet.spec.models import DesiredFleet, Seat


class FindingKind(StrEnum):
    """What kind of thing was noticed."""

    HOST_UNREACHABLE = "host-unreachable"
    GPU_FACTS_MISSING = "gpu-facts-missing"
    MODEL_DRIFT = "model-drift"
    DEAD_ALIAS = "dead-alias"
    FLOATING_TAG = "floating-tag"
    UNMANAGED_GPU_PROCESS = "unmanaged-gpu-process"
    UNMANAGED_CONTAINER = "unmanaged-container"
    CONCURRENCY_OUT_OF_BAND = "concurrency-out-of-band"
    SPECULATIVE_MIX = "speculative-mix"
    ALIAS_FAN_IN = "alias-fan-in"
    CONTAINER_NOT_RUNNING = "container-not-running"
    OUT_OF_MEMORY = "out-of-memory"
    ENGINE_ERROR = "engine-error"
    HOST_LOCKED = "host-locked"
    GATEWAY_UNREADABLE = "gateway-unreadable"
    INTERRUPTED_APPLY = "interrupted-apply"
    RESTARTED_BY_RUNTIME = "restarted-by-runtime"
    BENCH_REGRESSION = "bench-regression"
    UNUSED_MODEL = "unused-model"
    MODEL_CHANGED = "model-changed"
    GATEWAY_NOT_SERVING = "gateway-not-serving"
    CONFIG_NOT_LIVE = "config-not-live"
    ORPHAN_PROXY = "orphan-proxy"
    TWO_COPIES = "two-copies"
    CLIENT_KEY_MISSING = "client-key-missing"
    CLIENT_KEY_DRIFT = "client-key-drift"
    CLIENT_NOT_AT_GATEWAY = "client-not-at-gateway"
    UNDECLARED_CLIENT = "undeclared-client"
    KEY_FILE_UNREADABLE = "key-file-unreadable"
    TARGETS_DRIFT = "targets-drift"


class Finding(CoreModel):
    """One thing worth a look, with the host, seat or alias it is about."""

    kind: FindingKind
    target: str
    message: str
    severity: Severity = Severity.WARNING


FAN_IN_THRESHOLD = 3


def find_issues(desired: DesiredFleet, observation: Observation) -> list[Finding]:
    """Every finding about the live fleet, sorted."""
    found: list[Finding] = []
    for host in observation.hosts.values():
        found += _host_findings(desired, host)
    found += _gateway_findings(observation)
    found += [
        Finding(kind=FindingKind(k), target=t, message=m, severity=Severity.ERROR)
        for k, t, m in served_findings(observation)
    ]
    found += [
        Finding(kind=FindingKind(k), target=t, message=m, severity=Severity.ERROR)
        for k, t, m in client_findings(desired, observation)
    ]
    found += _speculative_mix(observation)
    found += _fan_in(observation)
    found += [
        Finding(kind=FindingKind(k), target=t, message=m, severity=Severity(s))
        for k, t, m, s in model_findings(desired, observation)
    ]
    return sorted(found, key=lambda f: (f.kind.value, f.target, f.message))


def _host_findings(desired: DesiredFleet, host: ObservedHost) -> Iterator[Finding]:
    if not host.reachable:
        yield Finding(
            kind=FindingKind.HOST_UNREACHABLE,
            target=host.name,
            message=host.error or "unreachable",
            severity=Severity.ERROR,
        )
        return
    if host.gpu_error:
        yield Finding(
            kind=FindingKind.GPU_FACTS_MISSING,
            target=host.name,
            message=f"nvidia-smi failed: {host.gpu_error}",
            severity=Severity.ERROR,
        )
    for gpu in host.gpus:
        if gpu.missing:
            yield Finding(
                kind=FindingKind.GPU_FACTS_MISSING,
                target=host.name,
                message=f"nvidia-smi's row of GPU {gpu.index} has no "
                f"{' and no '.join(gpu.missing)} (a vGPU guest prints none): "
                "what depends on it is not checked",
                severity=Severity.WARNING,
            )
    if host.lock:
        gone = host.lock_gone_pid
        message = stale_lock(host.name, gone) if gone is not None else _in_progress(host.lock)
        yield Finding(kind=FindingKind.HOST_LOCKED, target=host.name, message=message)
    elif host.interrupted:  # a journal left open with nobody holding the lock
        yield Finding(
            kind=FindingKind.INTERRUPTED_APPLY,
            target=host.name,
            severity=Severity.ERROR,
            message=f"an apply did not finish; steps done: "
            f"{'; '.join(host.interrupted)}. The plan shows what remains.",
        )
    yield from _gpu_processes(host)
    for seat in host.seats:
        yield from _seat_findings(desired, host, seat)


def stale_lock(host: str, pid: int) -> str:
    """`stale lock: pid 5665 on this machine is gone; the next apply takes it over`."""
    return (
        f"stale lock: pid {pid} on this machine is gone; the next `fleet apply` (or loop "
        f"cycle) takes it over and finishes or undoes what it left on {host}"
    )


def _in_progress(holder: str) -> str:
    """`apply in progress (by ops@ci pid 7 `fleet apply`, since 2026-12-01T00:00:00Z)`."""
    who, found, since = holder.strip().rpartition(" since ")
    if not found:
        return f"apply in progress (by {holder.strip()})"
    return f"apply in progress (by {who}, since {since})"


def _gpu_processes(host: ObservedHost) -> Iterator[Finding]:
    managed = {s.instance.id for s in host.seats if s.managed}
    names = {s.instance.id: s.instance.name for s in host.seats}
    for proc in host.processes:
        if proc.container_id in managed:
            continue
        owner = (
            f"container {names.get(proc.container_id or '', proc.container_id)} that "
            "fleet does not manage"
            if proc.container_id
            else "no container"
        )
        yield Finding(
            kind=FindingKind.UNMANAGED_GPU_PROCESS,
            target=f"{host.name}/gpu{proc.gpu_index}",
            message=f"pid {proc.pid} uses {proc.used_mib} MiB and belongs to {owner}",
        )


def _seat_findings(
    desired: DesiredFleet, host: ObservedHost, seat: ObservedSeat
) -> Iterator[Finding]:
    target = f"{host.name}/{seat.name}"
    container = seat.instance
    spec = desired.seats.get(seat.name) if seat.managed else _adopted(desired, host, seat)
    if spec is None:
        what = "fleet-labelled seat not in desired/" if seat.managed else "container"
        yield Finding(
            kind=FindingKind.UNMANAGED_CONTAINER,
            target=target,
            severity=Severity.INFO,
            message=f"{what} {container.name} ({container.image}); remove it "
            "with `fleet apply --prune`"
            if seat.managed
            else f"{what} {container.name} ({container.image}) is not managed by fleet",
        )
    if not container.running:
        why = f": {seat.exit_reason}" if seat.exit_reason else ""
        yield Finding(
            kind=FindingKind.CONTAINER_NOT_RUNNING,
            target=target,
            severity=Severity.ERROR,
            message=f"container is {container.state} (exit code {container.exit_code}{why}"
            f", {container.restart_count} restarts)",
        )
    if seat.out_of_memory:
        yield Finding(
            kind=FindingKind.OUT_OF_MEMORY,
            target=target,
            severity=Severity.ERROR,
            message=f"seat {seat.name} ran short of memory: {seat.out_of_memory}",
        )
    runtime = runtime_for(host.runtime) if host.runtime in RUNTIMES else None
    if runtime is not None and runtime.REPORTS_RESTARTS and container.restart_count > 0:
        since = f" since {host.applied_at}" if host.applied_at else ""
        yield Finding(
            kind=FindingKind.RESTARTED_BY_RUNTIME,
            target=target,
            message=f"seat {seat.name} restarted {container.restart_count} "
            f"time{'s' if container.restart_count > 1 else ''} by {runtime.RESTARTED_BY}{since}",
        )
    yield from _image_findings(desired, target, seat)
    if spec is not None and spec.served_name not in seat.served_names and seat.served_names:
        yield Finding(
            kind=FindingKind.MODEL_DRIFT,
            target=target,
            severity=Severity.ERROR,
            message=f"serves {', '.join(seat.served_names)} from {seat.model}; "
            f"desired/ says {spec.served_name} from {spec.model}",
        )
    concurrency = seat.concurrency
    if spec is not None and concurrency is not None:
        band = spec.band(desired.settings.concurrency_band)
        if not band.min <= concurrency <= band.max:
            yield Finding(
                kind=FindingKind.CONCURRENCY_OUT_OF_BAND,
                target=target,
                message=f"concurrency {concurrency:.2f}x is outside {band.min:g}x..{band.max:g}x",
            )
    for error in seat.engine.errors if seat.engine else ():
        yield Finding(
            kind=FindingKind.ENGINE_ERROR,
            target=target,
            severity=Severity.ERROR,
            message=f"{error.kind.value}: {error.message[:160]}",
        )


def _adopted(desired: DesiredFleet, host: ObservedHost, seat: ObservedSeat) -> Seat | None:
    """The seat a hand-made engine container stands for (desired/ names it on this host)."""
    spec = desired.seats.get(seat.hand_name) if seat.engine_name else None
    return spec if spec is not None and spec.host == host.name else None


def _image_findings(desired: DesiredFleet, target: str, seat: ObservedSeat) -> Iterator[Finding]:
    if seat.instance.image.startswith("/"):
        return  # an executable a systemd unit runs: no tag, no registry
    ref = parse_image(seat.instance.image)
    floating = desired.settings.images.floating_tags
    if ref.tag is None or ref.tag in floating:
        yield Finding(
            kind=FindingKind.FLOATING_TAG,
            target=target,
            message=f"image {seat.instance.image} floats: a recreate may pull something else",
        )
    elif not seat.instance.repo_digests and ref.digest is None:
        yield Finding(
            kind=FindingKind.FLOATING_TAG,
            target=target,
            severity=Severity.INFO,
            message=f"image {seat.instance.image} has no registry digest recorded "
            f"(image id {seat.instance.image_id[:19]})",
        )


def _gateway_findings(observation: Observation) -> Iterator[Finding]:
    gateway = observation.gateway
    if gateway is not None and gateway.error:
        yield Finding(
            kind=FindingKind.GATEWAY_UNREADABLE,
            target=f"gateway {gateway.host}",
            severity=Severity.ERROR,
            message=gateway.error,
        )
    if gateway is None or gateway.config is None:
        return
    for entry in gateway.config.entries:
        probe = gateway.probes.get(entry.address or "")
        if probe is None:
            continue
        if not probe.answers:
            yield Finding(
                kind=FindingKind.DEAD_ALIAS,
                target=f"alias {entry.alias}",
                severity=Severity.ERROR,
                message=f"backend {redact_url(entry.address or '')} does not answer "
                f"({redact(probe.error or 'no reply')})",
            )
            continue
        expected = (entry.model or "").split("/", 1)[-1]
        if expected and probe.models and expected not in probe.models:
            yield Finding(
                kind=FindingKind.MODEL_DRIFT,
                target=f"alias {entry.alias}",
                severity=Severity.ERROR,
                message=f"gateway expects model {expected!r} at "
                f"{redact_url(entry.address or '')}, which serves {', '.join(probe.models)}",
            )


def _speculative_mix(observation: Observation) -> Iterator[Finding]:
    methods: dict[str, set[str]] = defaultdict(set)
    for host in observation.hosts.values():
        for seat in host.seats:
            method = (seat.speculative or {}).get("method")
            if method:  # a seat being replaced runs twice for a moment: name it once
                methods[str(method)].add(seat.name)
    if len(methods) > 1:
        listing = "; ".join(f"{m}: {', '.join(sorted(s))}" for m, s in sorted(methods.items()))
        yield Finding(
            kind=FindingKind.SPECULATIVE_MIX,
            target="fleet",
            severity=Severity.INFO,
            message=f"{len(methods)} speculative methods coexist ({listing}); a "
            "speculative setting copied between them silently breaks",
        )


def _fan_in(observation: Observation) -> Iterator[Finding]:
    gateway = observation.gateway
    if gateway is None or gateway.config is None:
        return
    fan: dict[str, list[str]] = defaultdict(list)
    for entry in gateway.config.entries:
        if entry.address:
            fan[entry.address].append(entry.alias)
    for api_base, aliases in sorted(fan.items()):
        if len(aliases) >= FAN_IN_THRESHOLD:
            yield Finding(
                kind=FindingKind.ALIAS_FAN_IN,
                target=api_base,
                severity=Severity.INFO,
                message=f"{len(aliases)} aliases fan into one seat: {', '.join(sorted(aliases))}",
            )
