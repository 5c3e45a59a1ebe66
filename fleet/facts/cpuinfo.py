"""A host's CPU features from /proc/cpuinfo: whether it has AMX, which decides how vLLM's
CPU build runs an MLA model (its block size, prefix caching, chunked prefill).

Called by observation on the first `flags` line of /proc/cpuinfo (x86: the first
processor's feature flags; the fact script reads it with the shell alone). `amx` is
True where the flags name `amx_tile` (what `torch.cpu._is_amx_tile_supported` checks),
False where a flags line names no such flag, None where no flags line was read (another
architecture, or nothing answered).
Total: never raises.
"""

from __future__ import annotations

from fleet.base import CoreModel

AMX_FLAG = "amx_tile"


class CpuFacts(CoreModel):
    """What plan needs of a host's CPU."""

    amx: bool | None = None


def parse_cpu_flags(text: str) -> CpuFacts:
    """The AMX flag of the first `flags : ...` line."""
    for line in text.splitlines():
        name, sep, flags = line.partition(":")
        if sep and name.strip() == "flags":
            return CpuFacts(amx=AMX_FLAG in flags.split())
    return CpuFacts()
