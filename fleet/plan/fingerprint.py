"""Fingerprints of the observed facts a plan relies on, so a saved plan can go stale.

`fingerprint` is computed by `make_plan` and again when `fleet apply PLAN` starts;
`moved` names every fact whose fingerprint changed. Facts: each seat's container (id,
state, image id and spec hash) or its absence, each touched GPU's free memory in whole
GiB, each needed model directory (its drafter's too): present or missing and what
observation read of it (config.json, size on disk, lineage), on which the plan's
predictions and blockers rest, and the gateway config's exact text.
"""

from __future__ import annotations

import hashlib

from fleet.names import HASH_LABEL
from fleet.observed.models import Observation, ObservedHost
from fleet.plan.actions import Action, ActionKind, Wave
from fleet.plan.live_port import follow_live_ports
from fleet.spec.models import DesiredFleet


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def fingerprint(
    desired: DesiredFleet, observation: Observation, actions: tuple[Action, ...]
) -> dict[str, str]:
    """key -> short hash (or value) of every fact behind the actions."""
    desired = follow_live_ports(desired, observation)
    prints: dict[str, str] = {}
    for action in actions:
        if action.wave is Wave.GATEWAY:
            gateway = observation.gateway
            prints["gateway/config"] = _sha(gateway.config_text or "") if gateway else "absent"
            continue
        if action.kind is ActionKind.FETCH_MODEL:
            host = observation.hosts.get(action.host)
            key = f"host/{action.host}/model/{action.target}"
            prints[key] = _model_print(host, action.target) if host else "not observed"
            continue
        prints.update(_seat_prints(desired, observation, action))
    return dict(sorted(prints.items()))


def _seat_prints(desired: DesiredFleet, observation: Observation, action: Action) -> dict[str, str]:
    prints: dict[str, str] = {}
    host = observation.hosts.get(action.host)
    if host is None:
        return {f"host/{action.host}": "not observed"}
    seat = host.seat(action.target)
    key = f"host/{host.name}/seat/{action.target}"
    if seat is None:
        prints[key] = "absent"
    else:
        c = seat.instance
        prints[key] = _sha(f"{c.id} {c.state} {c.image_id} {c.labels.get(HASH_LABEL)}")
    spec = desired.seats.get(action.target)
    if spec is not None and action.kind is not ActionKind.REMOVE_SEAT:
        for gpu in host.gpus:
            if gpu.index in spec.gpus:
                prints[f"host/{host.name}/gpu/{gpu.index}/free-gib"] = str(
                    gpu.memory_free_mib // 1024
                )
        drafter = spec.speculative.draft_model if spec.speculative else None
        for model in (spec.model, drafter):
            if model is not None:
                prints[f"host/{host.name}/model/{model}"] = _model_print(host, model)
    return prints


def _model_print(host: ObservedHost, model: str) -> str:
    """`missing`, or `present` and a hash of what observation read of the directory."""
    path = model.rstrip("/")
    if path in host.missing_paths:
        return "missing"
    info = host.models.get(path)
    if info is None:
        return "present"
    return f"present {_sha(info.model_dump_json(exclude={'files'}))}"  # not its files' atimes


def moved(saved: dict[str, str], now: dict[str, str]) -> list[str]:
    """The keys whose fact changed since the plan was saved, with old and new values."""
    return [
        f"{key}: {saved[key]} -> {now.get(key, 'gone')}"
        for key in sorted(saved)
        if now.get(key) != saved[key]
    ]
