"""The GPU facts of a host: its GPUs, and the processes on them with their cgroups.

Each is a `Fact` (command, sections, parser, default in one place) read by
`fleet.observed.assemble`; the parsers are `fleet.facts.nvidia_smi`'s. Where the CSV query
fails (a driver that lacks a field) the GPU fact reads nvidia-smi's table view instead;
which seat a process belongs to is its host runtime's to say, from the process's
/proc/<pid>/cgroup (`fleet.runtimes`).
"""

from __future__ import annotations

from pydantic import Field

from fleet.base import CoreModel
from fleet.facts.nvidia_smi import (
    COMPUTE_APPS_FIELDS,
    GPU_QUERY_FIELDS,
    GpuFact,
    GpuProcess,
    parse_compute_apps,
    parse_gpu_query,
    parse_nvidia_smi_table,
)
from fleet.facts.script import Fact, Parts, body


class GpuReading(CoreModel):
    """The host's GPUs, the processes the table view listed (if it was read), or why
    nvidia-smi gave nothing."""

    gpus: tuple[GpuFact, ...] = ()
    table_processes: tuple[GpuProcess, ...] = ()
    error: str | None = None


class GpuProcesses(CoreModel):
    """The compute processes nvidia-smi lists, and each one's /proc/<pid>/cgroup."""

    listed: tuple[GpuProcess, ...] = ()
    cgroups: dict[int, str] = Field(default_factory=dict)


def _query(kind: str, fields: tuple[str, ...]) -> str:
    return f"nvidia-smi --query-{kind}={','.join(fields)} --format=csv,noheader,nounits"


def _gpus_command() -> str:
    """The CSV query and its exit status; the table view only where the query failed."""
    return (
        f"mark gpus\n{_query('gpu', GPU_QUERY_FIELDS)} 2>&1\nrc=$?\nmark gpus-rc $rc\n"
        '[ "$rc" = 0 ] || [ "$rc" = 127 ] || { mark gpu-table; nvidia-smi 2>&1; }\n'
    )


def _read_gpus(parts: Parts) -> GpuReading:
    text = body(parts, "gpus")
    table = parse_nvidia_smi_table(body(parts, "gpu-table"))
    found = parse_gpu_query(text)
    if "0" not in parts["gpus-rc"]:
        found = table.gpus
        if not found:
            lines = [line for line in text.splitlines() if line.strip()]
            error = lines[0] if lines else "nvidia-smi failed"
            return GpuReading(table_processes=table.processes, error=error)
    return GpuReading(gpus=found, table_processes=table.processes)


GPUS: Fact[GpuReading] = Fact(
    name="gpus",
    command=_gpus_command,
    sections=("gpus", "gpus-rc", "gpu-table"),
    process=_read_gpus,
    default=GpuReading(error="nvidia-smi failed"),
)


def _processes_command() -> str:
    return (
        f"apps=$({_query('compute-apps', COMPUTE_APPS_FIELDS)} 2>/dev/null)\n"
        "mark apps\nprintf '%s\\n' \"$apps\"\n"
        "for pid in $(printf '%s\\n' \"$apps\" | cut -d, -f1 | tr -d ' '); do\n"
        '  mark cgroup "$pid"; cat "/proc/$pid/cgroup" 2>/dev/null\ndone\n'
    )


def _read_processes(parts: Parts) -> GpuProcesses:
    cgroups = {int(pid): text for pid, text in parts["cgroup"].items() if pid.isdigit()}
    return GpuProcesses(listed=tuple(parse_compute_apps(body(parts, "apps"))), cgroups=cgroups)


GPU_PROCESSES: Fact[GpuProcesses] = Fact(
    name="gpu-processes",
    command=_processes_command,
    sections=("apps", "cgroup"),
    process=_read_processes,
    default=GpuProcesses(),
)
