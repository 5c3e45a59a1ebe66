"""Desired vs observed seats, normalized into one comparable shape and diffed field by field.

Called by `fleet.plan`. Both sides become a `SeatShape` dict; deepdiff compares them.
Ignore rules (volatile facts never compared, so they never cause a change):
- pids, start times, restart counts, VRAM in use, KV tokens and every other log fact;
- the image *id* (a tag may be re-pulled): the image reference string is compared;
- GPU placement as nvidia-smi reports it when it answered; otherwise what the container
  requested (DeviceRequests / NVIDIA_VISIBLE_DEVICES);
- the order of served names.
The `spec_hash` label covers everything else in the compose service (env, mounts, health
check): when only it differs, the change is reported as `compose definition`.
"""

from __future__ import annotations

from typing import Any

from deepdiff import DeepDiff

from fleet.base import CoreModel
from fleet.names import HASH_LABEL
from fleet.observed.models import ObservedSeat
from fleet.render.compose import render_service
from fleet.secrets import mask_argv
from fleet.spec.models import Host, Seat

SeatShape = dict[str, Any]
COMPARED = (
    "image",
    "model",
    "served_names",
    "port",
    "context",
    "kv_cache_bytes",
    "gpu_memory_utilization",
    "tensor_parallel_size",
    "speculative",
    "gpus",
    "extra_args",
)


class FieldChange(CoreModel):
    """One field that differs: what runs now (old) and what desired/ says (new)."""

    field: str
    old: Any = None
    new: Any = None


def desired_shape(seat: Seat, host: Host) -> SeatShape:
    """The comparable shape of a seat spec."""
    spec = seat.speculative
    speculative = None
    if spec is not None:
        speculative = {"method": spec.method, "num_speculative_tokens": spec.num_tokens}
        if spec.draft_model:
            speculative["model"] = spec.draft_model
    return {
        "image": seat.image,
        "model": seat.model,
        "served_names": [seat.served_name],
        "port": seat.port,
        "context": seat.context,
        "kv_cache_bytes": seat.kv_cache_bytes,
        "gpu_memory_utilization": seat.gpu_memory_utilization,
        "tensor_parallel_size": len(seat.gpus),
        "speculative": speculative,
        "gpus": list(seat.gpus),
        "extra_args": list(mask_argv(seat.extra_args)),
        "spec_hash": render_service(seat, host)["labels"][HASH_LABEL],
    }


def observed_shape(seat: ObservedSeat) -> SeatShape:
    """The comparable shape of what runs."""
    requested = [int(g) for g in seat.container.gpu_request if g.isdigit()]
    return {
        "image": seat.container.image,
        "model": seat.model,
        "served_names": sorted(seat.served_names),
        "port": seat.port,
        "context": seat.max_model_len,
        "kv_cache_bytes": seat.kv_cache_bytes,
        "gpu_memory_utilization": seat.gpu_memory_utilization,
        "tensor_parallel_size": seat.tensor_parallel_size or 1,
        "speculative": _speculative(seat.speculative),
        "gpus": list(seat.gpus) or sorted(requested),
        "extra_args": list(mask_argv(seat.extra_args)),
        "spec_hash": seat.container.labels.get(HASH_LABEL),
    }


def _speculative(config: dict[str, object] | None) -> dict[str, object] | None:
    if not config:
        return None
    keep = ("method", "num_speculative_tokens", "model")
    return {k: config[k] for k in keep if config.get(k) is not None}


def diff_seat(desired: SeatShape, observed: SeatShape) -> list[FieldChange]:
    """Field-by-field changes, sorted; `compose definition` when only the hash differs."""
    left = {k: observed.get(k) for k in COMPARED}
    right = {k: desired.get(k) for k in COMPARED}
    delta = DeepDiff(left, right, view="tree", ignore_numeric_type_changes=True)
    changes: dict[str, FieldChange] = {}
    for level in (lvl for group in delta.values() for lvl in group):
        path = level.path(output_format="list")
        field = (
            ".".join(str(p) for p in path[:2])
            if path and path[0] == "speculative"
            else str(path[0])
        )
        top = path[0]
        changes[field] = FieldChange(
            field=field, old=_at(left[top], path[1:2]), new=_at(right[top], path[1:2])
        )
    if not changes and desired.get("spec_hash") != observed.get("spec_hash"):
        changes["compose definition"] = FieldChange(
            field="compose definition", old=observed.get("spec_hash"), new=desired.get("spec_hash")
        )
    return [changes[k] for k in sorted(changes)]


def _at(value: Any, path: list[Any]) -> Any:
    for part in path:
        value = value.get(part) if isinstance(value, dict) else None
    return value
