"""Fact parsers: each turns the text one command printed into a frozen model.

A parser is a pure function `parse(text) -> Model`: no I/O, and it never raises on
odd input (a missing fact is None, an unreadable line is skipped).

The names below are re-exported lazily (PEP 562): importing one fact module (say
`fleet.facts.argv`, which every command's start-up needs) runs this package first, and
importing every parser here would define all their models on each start of the CLI.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fleet.facts.argv import EngineArgs, parse_human_int
    from fleet.facts.cgroup import parse_cgroup
    from fleet.facts.kv_estimate import estimate_kv_bytes_per_token, estimate_kv_tokens
    from fleet.facts.model_config import (
        AttentionFacts,
        AttentionKind,
        ModelFacts,
        parse_model_config,
    )
    from fleet.facts.nvidia_smi import (
        GpuFact,
        GpuProcess,
        NvidiaSmiTable,
        parse_compute_apps,
        parse_gpu_query,
        parse_nvidia_smi_table,
    )
    from fleet.facts.provenance import Provenance, parse_provenance, provenance_path
    from fleet.facts.quantization import (
        QuantizationFacts,
        parse_hf_quant_config,
        parse_quantization_config,
    )

_MODULE_OF = {
    "EngineArgs": "argv",
    "parse_human_int": "argv",
    "parse_cgroup": "cgroup",
    "estimate_kv_bytes_per_token": "kv_estimate",
    "estimate_kv_tokens": "kv_estimate",
    "AttentionFacts": "model_config",
    "AttentionKind": "model_config",
    "ModelFacts": "model_config",
    "parse_model_config": "model_config",
    "GpuFact": "nvidia_smi",
    "GpuProcess": "nvidia_smi",
    "NvidiaSmiTable": "nvidia_smi",
    "parse_compute_apps": "nvidia_smi",
    "parse_gpu_query": "nvidia_smi",
    "parse_nvidia_smi_table": "nvidia_smi",
    "Provenance": "provenance",
    "parse_provenance": "provenance",
    "provenance_path": "provenance",
    "QuantizationFacts": "quantization",
    "parse_hf_quant_config": "quantization",
    "parse_quantization_config": "quantization",
}

__all__ = [
    "AttentionFacts",
    "AttentionKind",
    "EngineArgs",
    "GpuFact",
    "GpuProcess",
    "ModelFacts",
    "NvidiaSmiTable",
    "Provenance",
    "QuantizationFacts",
    "estimate_kv_bytes_per_token",
    "estimate_kv_tokens",
    "parse_cgroup",
    "parse_compute_apps",
    "parse_gpu_query",
    "parse_hf_quant_config",
    "parse_human_int",
    "parse_model_config",
    "parse_nvidia_smi_table",
    "parse_provenance",
    "parse_quantization_config",
    "provenance_path",
]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"fleet.facts.{module}"), name)
