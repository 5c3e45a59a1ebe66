"""The simulated GPUs as an engine inside a container sees them.

The lab's OCI runtime wrapper (tests/lab/runtime/gpu_runtime.py) plays the NVIDIA
container toolkit: for a container that was handed GPUs it bind-mounts the host's GPU
directory at GPU_DIR and sets FLEET_LAB_GPUS (physical indices) and
FLEET_LAB_CONTAINER_ID. An engine records what it allocates in GPU_DIR/usage, which
is how other engines see the memory already in use and how nvidia-smi reports it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

GPU_DIR = Path(os.environ.get("FLEET_LAB_GPU_DIR", "/run/fleet-lab-gpu"))
MiB = 1 << 20


@dataclass(frozen=True)
class Gpu:
    """One GPU handed to this container."""

    index: int  # physical index on the host
    name: str
    total_bytes: int
    uuid: str


def visible_gpus() -> list[Gpu]:
    """The GPUs handed to this container, in CUDA order; [] when none were."""
    wanted = os.environ.get("FLEET_LAB_GPUS", "")
    table = GPU_DIR / "gpus.json"
    if not table.is_file():
        return []
    by_index = {g["index"]: g for g in json.loads(table.read_text())}
    if "FLEET_LAB_CONTAINER_ID" not in os.environ:  # on the host itself, not in a container
        cuda = os.environ.get("CUDA_VISIBLE_DEVICES")
        wanted = ",".join(map(str, sorted(by_index))) if cuda is None else cuda
    if not wanted.strip():
        return []
    picked = [by_index[int(i)] for i in wanted.split(",") if int(i) in by_index]
    return [Gpu(g["index"], g["name"], g["memory_mib"] * MiB, g["uuid"]) for g in picked]


def container_id() -> str:
    """The id of the container this process runs in (set by the runtime wrapper), or of
    the systemd unit's invocation on a host without containers."""
    if "FLEET_LAB_CONTAINER_ID" not in os.environ and "INVOCATION_ID" in os.environ:
        return "unit-" + os.environ["INVOCATION_ID"]
    return os.environ.get("FLEET_LAB_CONTAINER_ID", "unknown")


def used_by_others(gpu: Gpu) -> int:
    """Bytes other engines (other containers) hold on `gpu`."""
    own = container_id()
    total = 0
    for path in (GPU_DIR / "usage").glob("*.json"):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if _dead_unit_process(record):  # killed (-9) before it could release: freed
            path.unlink(missing_ok=True)
            continue
        if record.get("gpu") == gpu.index and record.get("container") != own:
            total += int(record.get("mib", 0)) * MiB
    return total


def _dead_unit_process(record: dict[str, object]) -> bool:
    """Is this the record of a systemd unit's engine on this host that no longer runs?
    The driver frees a dead process's memory; a container's records are freed by the
    runtime wrapper at its delete, a unit's have no such step (and share this pid
    namespace, so its pid tells)."""
    unit = str(record.get("container", "")).startswith("unit-")
    return unit and not Path(f"/proc/{record.get('pid')}").exists()


def record_usage(gpu: Gpu, nbytes: int, process_name: str) -> Path:
    """Register `nbytes` held by this process on `gpu` (what nvidia-smi will report)."""
    usage = GPU_DIR / "usage"
    usage.mkdir(parents=True, exist_ok=True)
    path = usage / f"{container_id()}-{os.getpid()}-{gpu.index}.json"
    record = {
        "gpu": gpu.index,
        "mib": nbytes // MiB,
        "pid": os.getpid(),
        "name": process_name,
        "container": container_id(),
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record))
    tmp.rename(path)
    return path


def release_usage(paths: list[Path]) -> None:
    """Forget this process's allocations (the driver frees memory of a dead process)."""
    for path in paths:
        path.unlink(missing_ok=True)
