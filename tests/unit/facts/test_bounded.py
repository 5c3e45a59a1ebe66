"""A host's text costs time in proportion to its length: a 40,000-character line in a log,
an nvidia-smi table or a provenance file is read in milliseconds, not in the seconds to
minutes a backtracking pattern takes (`\\w+` tried at every offset of a long word)."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from fleet.engines.llamacpp.log import parse_llamacpp_log
from fleet.engines.sglang.log import read_log as parse_sglang_log
from fleet.engines.vllm.lines import log_lines, messages
from fleet.engines.vllm.log import parse_vllm_log
from fleet.facts.nvidia_smi import parse_compute_apps, parse_gpu_query, parse_nvidia_smi_table
from fleet.facts.provenance import parse_provenance
from fleet.facts.unit_journal import parse_unit_journal
from tests.unit.facts.test_systemctl import parse_systemctl_show

N = 40_000
LONG_LINES = {
    "word": "a" * N,
    "digits": "1" * N,
    "spaces-inside": "x" * (N // 2) + " " * (N // 2) + "x",
    "colons": "a: " * (N // 3),
    "kv-size-repeated": "llama_kv_cache: size = 1 MiB " * (N // 30),
    "kv-self-repeated": "a: kv self size = 1 MiB, K (f): " * (N // 32),
    "brackets": "[" * N,
    "spaces-then-repeated": "x" + " " * N + "y",
    "mib": "1MiB " * (N // 5),
}
PARSERS: dict[str, Callable[[str], object]] = {
    "llamacpp-log": parse_llamacpp_log,
    "vllm-log": parse_vllm_log,
    "vllm-lines": lambda text: messages(log_lines(text)),
    "sglang-log": parse_sglang_log,
    "nvidia-smi-table": parse_nvidia_smi_table,
    "nvidia-smi-query": parse_gpu_query,
    "nvidia-smi-apps": parse_compute_apps,
    "systemctl-show": parse_systemctl_show,
    "provenance": parse_provenance,
    "unit-journal": lambda text: parse_unit_journal(text, "fleet-x.service"),
}
BOUND = 5.0  # seconds for all the long lines through one parser: linear takes ~0.1 s


@pytest.mark.parametrize("parser", list(PARSERS.values()), ids=list(PARSERS))
def test_a_long_line_is_read_in_linear_time(parser: Callable[[str], object]) -> None:
    start = time.perf_counter()
    for line in LONG_LINES.values():
        parser(f"{line}\n[repeated 2x across cluster] {line}\n")
    assert time.perf_counter() - start < BOUND
