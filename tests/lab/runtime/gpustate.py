"""The simulated driver's state on one host: its GPUs and the processes holding memory.

A host's GPU directory (<lab>/hosts/<host>/gpu) holds gpus.json (the cards), usage/
(one JSON file per engine process and GPU, written by the engine inside its container,
see tests/lab/engine/gpu.py) and, when present, the flag file `driver-gone`.
Engine processes record their pid as seen inside the container; the host pid is found
through /proc/<pid>/status (NSpid) and /proc/<pid>/cgroup (the container id). An engine
started by a systemd unit on the host itself (container `unit-<invocation id>`) records
the pid nvidia-smi sees.

Every `fleet plan` runs nvidia-smi twice on each GPU host, ~1,300 times in a run of the
suite: the module imports little (no pathlib, no dataclasses) and reads /proc only for
the containers that recorded usage.
"""

from __future__ import annotations

import json
import os
from collections import namedtuple

# One process holding memory on a GPU, as nvidia-smi lists it (pid: the host's).
GpuProcess = namedtuple("GpuProcess", ["gpu", "pid", "name", "used_mib"])


def read_text(path: str | os.PathLike) -> str:
    with open(path, encoding="utf-8") as file:
        return file.read()


def read_gpus(gpu_dir: str | os.PathLike) -> list[dict]:
    """The host's simulated GPUs: index, name, memory_mib, uuid."""
    return json.loads(read_text(os.path.join(gpu_dir, "gpus.json")))


def driver_gone(gpu_dir: str | os.PathLike) -> bool:
    """The failure switch: nvidia-smi behaves as if the kernel driver were unloaded."""
    return os.path.exists(os.path.join(gpu_dir, "driver-gone"))


def usage_records(gpu_dir: str | os.PathLike) -> list[dict]:
    """What engines recorded in usage/ (unreadable files skipped)."""
    usage = os.path.join(gpu_dir, "usage")
    try:
        names = sorted(n for n in os.listdir(usage) if n.endswith(".json"))
    except OSError:
        return []
    records = []
    for name in names:
        try:
            records.append(json.loads(read_text(os.path.join(usage, name))))
        except (OSError, ValueError):
            continue
    return records


def read_proc(pid: str, name: str) -> str:
    """/proc/<pid>/<name>, '' if the process is gone."""
    try:
        return read_text(f"/proc/{pid}/{name}")
    except OSError:
        return ""


def namespace_pids(containers: set[str]) -> dict[tuple[str, int], int]:
    """(container id, pid inside the container) -> host pid, for the live processes of
    these containers (a process's cgroup path names its container's id)."""
    table: dict[tuple[str, int], int] = {}
    if not containers:
        return table
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        cgroup = read_proc(pid, "cgroup")
        owner = next((c for c in containers if c in cgroup), None)
        if owner is None:
            continue
        status = read_proc(pid, "status")
        nspid = [ln for ln in status.splitlines() if ln.startswith("NSpid:")]
        if nspid and "\nState:\tZ" not in status:
            table[(owner, int(nspid[0].split()[-1]))] = int(pid)
    return table


def host_pid_alive(record: dict) -> bool:
    """Is the recorded pid a live process here (not a zombie)?"""
    status = read_proc(str(record.get("pid", "")), "status")
    return bool(status) and "\nState:\tZ" not in status


def gpu_processes(gpu_dir: str | os.PathLike) -> list[GpuProcess]:
    """Live engine processes and their memory, sorted by GPU and pid."""
    records = usage_records(gpu_dir)
    containers = {str(r.get("container")) for r in records}
    table = namespace_pids({c for c in containers if len(c) == 64})
    found = []
    for record in records:
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
