"""Desired vs observed seats, normalized into one comparable shape and diffed field by field.

Called by `fleet.plan` and the health gate. Both sides become a `SeatShape` dict: the
container's engine, image and GPUs, plus the fields the seat's engine module compares
(`fleet.engines`: the vLLM or llama.cpp flags); deepdiff compares them.
Ignore rules (volatile facts never compared, so they never cause a change):
- pids, start times, restart counts, VRAM in use, KV tokens and every other log fact;
- the image *id* (a tag may be re-pulled): the image reference string is compared;
- GPU placement as nvidia-smi reports it when it answered; otherwise what the container
  requested (DeviceRequests / NVIDIA_VISIBLE_DEVICES);
- the order of served names.
The `spec_hash` label covers everything else in the seat's definition as the host's
runtime renders it (`fleet.runtimes`; a compose service: env, mounts, health check): when
only it differs, each key that differs between the definition fleet wrote on the host and
the one desired/ renders is named (`env HF_HUB_OFFLINE: 0 -> 1`, `fleet.plan.detail`);
`compose definition: <hash> -> <hash>` (the runtime's `DEFINITION`) only when nothing
names it.
`extra_args` changes are shown flag by flag.
"""

from __future__ import annotations

from typing import Any

from fleet.base import CoreModel
from fleet.engines import engine_for, read_process
from fleet.names import HASH_LABEL
from fleet.observed.models import ObservedSeat
from fleet.plan import detail
from fleet.runtimes import runtime_for
from fleet.spec.models import Host, Seat

SeatShape = dict[str, Any]
CONTAINER_FIELDS = ("engine", "image", "gpus")


class FieldChange(CoreModel):
    """One field that differs: what runs now (old) and what desired/ says (new)."""

    field: str
    old: Any = None
    new: Any = None


def desired_shape(seat: Seat, host: Host) -> SeatShape:
    """The comparable shape of a seat spec: container fields plus its engine's fields."""
    engine = engine_for(seat.engine)
    runtime = runtime_for(host)
    definition = runtime.render_seat(seat, host)
    return {
        "engine": engine.NAME,
        "image": seat.image,
        "gpus": list(seat.gpus),
        **engine.desired_shape(seat),
        "compared": CONTAINER_FIELDS + engine.COMPARED,
        "definition": definition,
        "definition_kind": runtime.DEFINITION,
        "spec_hash": runtime.spec_hash(definition),
    }


def observed_shape(seat: ObservedSeat) -> SeatShape:
    """The comparable shape of what runs, read by the engine its process runs."""
    args, engine = read_process(seat.instance.argv)
    requested = [int(g) for g in seat.instance.gpu_request if g.isdigit()]
    return {
        "engine": engine.NAME if engine else None,
        "image": seat.instance.image,
        "gpus": list(seat.gpus) or sorted(requested),
        **(engine.observed_shape(args) if engine else {}),
        "compared": CONTAINER_FIELDS + (engine.COMPARED if engine else ()),
        "definition": seat.definition,
        "spec_hash": seat.instance.labels.get(HASH_LABEL),
    }


def diff_seat(desired: SeatShape, observed: SeatShape) -> list[FieldChange]:
    """Field-by-field changes, sorted; the runtime's definition (`compose definition`)
    when only the hash differs."""
    fields = sorted(set(desired["compared"]) | set(observed["compared"]))
    left = {k: observed.get(k) for k in fields}
    right = {k: desired.get(k) for k in fields}
    differ = [k for k in fields if not _same(left[k], right[k])]
    delta: Any = {}
    if differ:
        # imported here: a plan of seats in sync never needs it, and deepdiff with what it
        # imports (numpy, where installed) is a fifth of a command's start-up
        from deepdiff import DeepDiff

        delta = DeepDiff(
            {k: left[k] for k in differ},
            {k: right[k] for k in differ},
            view="tree",
            ignore_numeric_type_changes=True,
        )
    changes: dict[str, FieldChange] = {}
    for level in (lvl for group in delta.values() for lvl in group):
        top, *below = level.path(output_format="list")
        # a speculative setting is named on its own; any other field whole (a list's item
        # path, `gpus[1]`, would name no value: `gpus: [0] -> [0, 1]`)
        sub = below[:1] if top == "speculative" else []
        field = ".".join(str(p) for p in (top, *sub))
        changes[field] = FieldChange(field=field, old=_at(left[top], sub), new=_at(right[top], sub))
    if "extra_args" in changes:
        del changes["extra_args"]
        changes.update(
            _keyed(detail.flag_changes(left["extra_args"] or [], right["extra_args"] or []))
        )
    if not changes and desired.get("spec_hash") != observed.get("spec_hash"):
        changes.update(
            _keyed(detail.service_changes(observed.get("definition"), desired.get("definition")))
        )
    if not changes and desired.get("spec_hash") != observed.get("spec_hash"):
        kind = desired["definition_kind"]
        changes[kind] = FieldChange(
            field=kind, old=observed.get("spec_hash"), new=desired.get("spec_hash")
        )
    return [changes[k] for k in sorted(changes)]


def _same(left: Any, right: Any) -> bool:
    """Equal as deepdiff would find them, quickly: most seats are in sync, and deepdiff
    costs about a millisecond a seat even when nothing differs. Numbers of either type are
    equal by value; a bool equals only a bool."""
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_same(left[k], right[k]) for k in left)
    if isinstance(left, list | tuple) and isinstance(right, list | tuple):
        return (
            type(left) is type(right)
            and len(left) == len(right)
            and all(_same(a, b) for a, b in zip(left, right, strict=True))
        )
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    return type(left) is type(right) and left == right


def _keyed(found: list[tuple[str, str, str]]) -> dict[str, FieldChange]:
    return {field: FieldChange(field=field, old=old, new=new) for field, old, new in found}


def _at(value: Any, path: list[Any]) -> Any:
    for part in path:
        value = value.get(part) if isinstance(value, dict) else None
    return value
