"""A host's AMX is read off the first flags line of /proc/cpuinfo: it decides how vLLM's CPU
build runs an MLA model (fleet.engines.vllm.kv, fleet.plan.seat_layout)."""

from __future__ import annotations

import pytest

from fleet.facts.cpuinfo import CpuFacts, parse_cpu_flags
from tests.conftest import CORPUS

# `grep -m1 '^flags' /proc/cpuinfo` on the lab's VM (tests/corpus/SOURCES.md, cpuinfo/)
LAB_VM = (CORPUS / "cpuinfo" / "lab-vm_xeon-amx_flags.txt").read_text()
WITHOUT_AMX = " ".join(f for f in LAB_VM.split(" ") if not f.startswith("amx_")) + "\n"
CASES = {
    "lab-vm-amx": (LAB_VM, True),
    "same-cpu-without-amx-flags": (WITHOUT_AMX, False),
    "arm-features-line": ("Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32\n", None),
    "nothing-read": ("", None),
    "amx-bf16-alone-is-no-tile": ("flags\t\t: fpu sse2 avx512f amx_bf16\n", False),
}


@pytest.mark.parametrize(("text", "amx"), list(CASES.values()), ids=list(CASES))
def test_amx_is_the_amx_tile_flag(text: str, amx: bool | None) -> None:
    assert parse_cpu_flags(text) == CpuFacts(amx=amx)


def test_the_recorded_line_is_one_flags_line_naming_amx() -> None:
    assert LAB_VM.startswith("flags\t\t: ") and LAB_VM.count("\n") == 1
    assert "amx_tile" in LAB_VM.split() and "amx_tile" not in WITHOUT_AMX.split()
