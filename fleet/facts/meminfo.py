"""A host's memory from /proc/meminfo: what a CPU-only seat's plan is checked against.

Called by observation on `head -n 3 /proc/meminfo` (MemTotal, MemFree, MemAvailable, in
kB). Total: lines it does not know are skipped; a figure it cannot read is None.
"""

from __future__ import annotations

import re

from fleet.base import CoreModel

_LINE = re.compile(r"^(\w+):\s+(\d+)\s*kB\s*$")


class MemoryFacts(CoreModel):
    """A host's RAM in MiB; None where /proc/meminfo did not say."""

    total_mib: int | None = None
    available_mib: int | None = None


def parse_meminfo(text: str) -> MemoryFacts:
    """MemTotal and MemAvailable (MemFree where the kernel predates MemAvailable)."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        if match := _LINE.match(line.strip()):
            values[match.group(1)] = int(match.group(2)) // 1024
    available = values.get("MemAvailable", values.get("MemFree"))
    return MemoryFacts(total_mib=values.get("MemTotal"), available_mib=available)
