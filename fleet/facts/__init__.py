"""Fact parsers: each turns the text one command printed into a frozen model.

A parser is a pure function `parse(text) -> Model`: no I/O, and it never raises on
odd input (a missing fact is None, an unreadable line is skipped).
"""

from fleet.facts.argv import EngineArgs, parse_human_int
from fleet.facts.cgroup import parse_cgroup
from fleet.facts.kv_estimate import estimate_kv_bytes_per_token, estimate_kv_tokens
from fleet.facts.model_config import AttentionFacts, AttentionKind, ModelFacts, parse_model_config
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
