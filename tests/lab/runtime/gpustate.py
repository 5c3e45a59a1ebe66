"""The simulated driver's state on one host: its GPUs and the processes holding memory.

A host's GPU directory (<lab>/hosts/<host>/gpu) holds gpus.json (the cards), usage/
(one JSON file per engine process and GPU, written by the engine inside its container,
see tests/lab/engine/gpu.py) and, when present, the flag file `driver-gone`.
Engine processes record their pid as seen inside the container; the host pid is found
through /proc/<pid>/status (NSpid) and /proc/<pid>/cgroup (the container id). An engine
started by a systemd unit on the host itself (container `unit-<invocation id>`) records
the pid nvidia-smi sees.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

CONTAINER_ID = re.compile(r"([0-9a-f]{64})")


@dataclass(frozen=True)
class GpuProcess:
    """One process holding memory on a GPU, as nvidia-smi lists it."""

    gpu: int
    pid: int  # host pid
    name: str
    used_mib: int


def read_gpus(gpu_dir: Path) -> list[dict]:
    """The host's simulated GPUs: index, name, memory_mib, uuid."""
    return json.loads((gpu_dir / "gpus.json").read_text())


def driver_gone(gpu_dir: Path) -> bool:
    """The failure switch: nvidia-smi behaves as if the kernel driver were unloaded."""
    return (gpu_dir / "driver-gone").exists()


def usage_records(gpu_dir: Path) -> list[dict]:
    """What engines recorded in usage/ (unreadable files skipped)."""
    records = []
    for path in sorted((gpu_dir / "usage").glob("*.json")):
        try:
            records.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    return records


def read_proc(pid: str, name: str) -> str:
    """/proc/<pid>/<name>, '' if the process is gone."""
    try:
        return Path(f"/proc/{pid}/{name}").read_text()
    except OSError:
        return ""


def namespace_pids() -> dict[tuple[str, int], int]:
    """(container id, pid inside the container) -> host pid, for live processes."""
    table: dict[tuple[str, int], int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        status = read_proc(entry.name, "status")
        if "\nState:\tZ" in status:
            continue
        match = CONTAINER_ID.search(read_proc(entry.name, "cgroup"))
        nspid = [ln for ln in status.splitlines() if ln.startswith("NSpid:")]
        if match and nspid:
            table[(match.group(1), int(nspid[0].split()[-1]))] = int(entry.name)
    return table


def host_pid_alive(record: dict) -> bool:
    """Is the recorded pid a live process here (not a zombie)?"""
    status = read_proc(str(record.get("pid", "")), "status")
    return bool(status) and "\nState:\tZ" not in status


def gpu_processes(gpu_dir: Path) -> list[GpuProcess]:
    """Live engine processes and their memory, sorted by GPU and pid."""
    table = namespace_pids()
    found = []
    for record in usage_records(gpu_dir):
        pid = table.get((str(record.get("container")), int(record.get("pid", -1))))
        if str(record.get("container")).startswith("unit-") and host_pid_alive(record):
            pid = int(record["pid"])
        if pid is not None:
            found.append(
                GpuProcess(int(record["gpu"]), pid, str(record["name"]), int(record["mib"]))
            )
    return sorted(found, key=lambda p: (p.gpu, p.pid))


def used_mib(processes: list[GpuProcess], gpu: int) -> int:
    """Memory in use on one GPU."""
    return sum(p.used_mib for p in processes if p.gpu == gpu)
