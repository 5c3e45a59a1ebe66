"""Facts from nvidia-smi: the GPUs of a host and the processes using them.

Called by the reconciler's host observer, which runs
`nvidia-smi --query-gpu=index,uuid,name,memory.total,memory.used --format=csv,noheader,nounits`
and `nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory --format=csv,noheader,nounits`
(the field lists below), and falls back to the default table view. CSV with a header
(`--format=csv`) is read by its column names, units in headers and values (`95830 MiB`)
are dropped, and `[N/A]` / `[Not Supported]` become None. Memory is in MiB throughout. A
table row that lacks a column (a vGPU guest prints no persistence mode and `N/A` memory)
still gives its GPU, with what is missing named.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from fleet.base import CoreModel
from fleet.facts._text import clean_lines, to_int

GPU_QUERY_FIELDS = ("index", "uuid", "name", "memory.total", "memory.used")
COMPUTE_APPS_FIELDS = ("pid", "gpu_uuid", "used_memory")

_KNOWN_COLUMNS = frozenset(
    GPU_QUERY_FIELDS
    + COMPUTE_APPS_FIELDS
    + ("timestamp", "process_name", "used_gpu_memory", "gpu_name", "gpu_bus_id", "pci.bus_id")
)
_UNIT = re.compile(r"\[[^\[\]]*\]$")  # the space before it: rstrip()
_NOT_AVAILABLE = frozenset(
    {"", "N/A", "[N/A]", "[Not Supported]", "[Not Found]", "[Unknown Error]"}
)
_NUMBER_WITH_UNIT = re.compile(r"(-?[\d.]+)\s*(?:MiB|%|W|MHz|C)")
_VERSIONS = re.compile(r"NVIDIA-SMI (\S+)\s+Driver Version: (\S+)(?:\s+CUDA Version: (\S+))?")
_TABLE_GPU = re.compile(
    r"^\|\s+(\d+)\s+(.+?)(?:\s+(On|Off))?\s+\|\s+([0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.\d+)"
)
_TABLE_MEMORY = re.compile(r"(?<!\d)(\d+)MiB\s*/\s*(\d+)MiB")
_TABLE_PROCESS = re.compile(
    r"^\|\s+(\d+)\s+(?:(?:N/A|\d+)\s+(?:N/A|\d+)\s+)?(\d+)\s+(C\+G|M\+C|C|G|M)\s+"
    r"(.+?)\s+(\d+MiB|N/A)\s*\|$"
)


class GpuFact(CoreModel):
    """One GPU as `--query-gpu` reports it (one row; a looped query repeats GPUs).

    `missing` names what a table row lacks (a vGPU guest's row may have no persistence
    mode and no memory usage), so it is said rather than guessed.
    """

    index: int | None = None
    uuid: str | None = None
    name: str | None = None
    memory_total_mib: int | None = None
    memory_used_mib: int | None = None
    bus_id: str | None = None
    timestamp: str | None = None
    missing: tuple[str, ...] = ()


class GpuProcess(CoreModel):
    """A process holding GPU memory; the query gives `gpu_uuid`, the table `gpu_index`."""

    pid: int
    gpu_uuid: str | None = None
    gpu_index: int | None = None
    process_name: str | None = None
    process_type: str | None = None
    used_memory_mib: int | None = None


class NvidiaSmiTable(CoreModel):
    """The default `nvidia-smi` view: versions, GPUs and the process list."""

    driver_version: str | None = None
    cuda_version: str | None = None
    gpus: tuple[GpuFact, ...] = ()
    processes: tuple[GpuProcess, ...] = ()


def parse_gpu_query(text: str, fields: Sequence[str] = GPU_QUERY_FIELDS) -> tuple[GpuFact, ...]:
    """The GPUs of a `--query-gpu` CSV; `fields` names the columns when there is no header."""
    gpus = []
    for row in _csv_rows(text, fields):
        gpus.append(
            GpuFact(
                index=to_int(row.get("index")),
                uuid=row.get("uuid"),
                name=row.get("name"),
                memory_total_mib=to_int(row.get("memory.total")),
                memory_used_mib=to_int(row.get("memory.used")),
                bus_id=row.get("pci.bus_id"),
                timestamp=row.get("timestamp"),
            )
        )
    return tuple(gpus)


def parse_compute_apps(
    text: str, fields: Sequence[str] = COMPUTE_APPS_FIELDS
) -> tuple[GpuProcess, ...]:
    """The processes of a `--query-compute-apps` CSV; rows without a pid are skipped."""
    processes = []
    for row in _csv_rows(text, fields):
        pid = to_int(row.get("pid"))
        if pid is None:
            continue
        memory = row.get("used_memory") or row.get("used_gpu_memory")
        processes.append(
            GpuProcess(
                pid=pid,
                gpu_uuid=row.get("gpu_uuid"),
                process_name=row.get("process_name"),
                used_memory_mib=to_int(memory),
            )
        )
    return tuple(processes)


def parse_nvidia_smi_table(text: str) -> NvidiaSmiTable:
    """Read the default table view (driver 4xx to 590 layouts)."""
    lines = clean_lines(text)
    versions = next((m for line in lines if (m := _VERSIONS.search(line))), None)
    gpus: list[GpuFact] = []
    processes: list[GpuProcess] = []
    for number, line in enumerate(lines):
        if match := _TABLE_GPU.search(line):
            following = lines[number + 1] if number + 1 < len(lines) else ""
            gpus.append(_table_gpu(match, _TABLE_MEMORY.search(following)))
        elif (match := _TABLE_PROCESS.search(line)) and (pid := to_int(match.group(2))):
            processes.append(
                GpuProcess(
                    pid=pid,
                    gpu_index=to_int(match.group(1)),
                    process_type=match.group(3),
                    process_name=match.group(4),
                    used_memory_mib=to_int(match.group(5).removesuffix("MiB")),
                )
            )
    return NvidiaSmiTable(
        driver_version=versions.group(2) if versions else None,
        cuda_version=versions.group(3) if versions else None,
        gpus=tuple(gpus),
        processes=tuple(processes),
    )


def _table_gpu(row: re.Match[str], memory: re.Match[str] | None) -> GpuFact:
    """A GPU of the table from its first row and the memory cell of the row below."""
    missing = () if row.group(3) else ("persistence mode",)
    return GpuFact(
        index=to_int(row.group(1)),
        name=row.group(2),
        bus_id=row.group(4),
        memory_used_mib=to_int(memory.group(1)) if memory else None,
        memory_total_mib=to_int(memory.group(2)) if memory else None,
        missing=missing if memory else (*missing, "memory usage"),
    )


def _csv_rows(text: str, fields: Sequence[str]) -> list[dict[str, str | None]]:
    """Rows as {column: value}, columns from the header line if there is one."""
    lines = [line for line in clean_lines(text) if line.strip()]
    if not lines:
        return []
    header = [_column(name) for name in lines[0].split(",")]
    columns = list(fields)
    if any(name in _KNOWN_COLUMNS for name in header):
        columns, lines = header, lines[1:]
    rows = []
    for line in lines:
        values = [value.strip() for value in line.split(",")]
        if len(values) > len(columns) and "process_name" in columns:
            values = _rejoin(values, columns.index("process_name"), len(columns))
        if len(values) == len(columns):
            rows.append({name: _value(value) for name, value in zip(columns, values, strict=True)})
    return rows


def _rejoin(values: list[str], at: int, width: int) -> list[str]:
    """Put a process name that contained commas back together."""
    extra = len(values) - width
    return [*values[:at], ", ".join(values[at : at + extra + 1]), *values[at + extra + 1 :]]


def _column(name: str) -> str:
    """`memory.used [MiB]` -> `memory.used`."""
    return _UNIT.sub("", name.strip()).rstrip()


def _value(value: str) -> str | None:
    """A cell without its unit (`95830 MiB`, `0 %`); None when nvidia-smi has no value."""
    if value in _NOT_AVAILABLE:
        return None
    number = _NUMBER_WITH_UNIT.fullmatch(value)
    return number.group(1) if number else value
