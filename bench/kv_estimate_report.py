"""Compare the KV-token estimate from a config.json with the tokens vLLM logged.

For every log in the recorded corpus (tests/corpus/vllm-logs) that has the config of
the same model architecture in the corpus (model-configs), print the per-GPU KV memory
the log states, the estimated KV bytes per token, the estimated and the logged KV tokens
and logged / estimated. Run: `.venv/bin/python bench/kv_estimate_report.py [CORPUS]`.
The pairs are listed by hand below, each with why the config fits the log.
"""

from __future__ import annotations

import sys
from pathlib import Path

from fleet.facts.kv_estimate import estimate_kv_bytes_per_token, estimate_kv_tokens
from fleet.facts.model_config import parse_model_config
from fleet.facts.vllm_log import parse_vllm_log

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "corpus"

# (log, config, why they match)
PAIRS = (
    (
        "v0.15.0rc2_v1_llama3-8b-w4a16-awq-compressed-tensors_offline-LLM.log",
        "llama-3.1-8b-instruct_dense.config.json",
        "Llama-3-8B and Llama-3.1-8B share the attention geometry (32 layers, 8 KV heads, "
        "head_dim 128); W4A16 quantizes weights only, the KV cache stays bf16",
    ),
    (
        "v0.8.3_v1_tinyllama_bitsandbytes_args-namespace.log",
        "tinyllama-1.1b-chat_compressed-tensors_fp8_kv_cache_scheme-fp8.config.json",
        "the same TinyLlama-1.1B-Chat-v1.0 (the config is of its FP8 re-quantization)",
    ),
)

COLUMNS = ("log", "config", "tp", "kv dtype", "kv GiB", "B/token/GPU", "estimated", "logged")


def compare(corpus: Path) -> list[dict[str, object]]:
    """One row per pair: the log's figures, the estimate and the ratio (None if unknown)."""
    rows = []
    for log_name, config_name, why in PAIRS:
        report = parse_vllm_log((corpus / "vllm-logs" / log_name).read_text())
        facts = parse_model_config((corpus / "model-configs" / config_name).read_text())
        kv_dtype = report.kv_cache_dtype or "auto"
        tp = report.tensor_parallel_size or 1
        estimated = None
        if report.kv_cache_gib is not None:
            estimated = estimate_kv_tokens(facts, report.kv_cache_gib, kv_dtype, tp)
        logged = report.kv_cache_tokens
        rows.append(
            {
                "log": log_name,
                "config": config_name,
                "why": why,
                "tp": tp,
                "kv dtype": kv_dtype,
                "kv GiB": report.kv_cache_gib,
                "B/token/GPU": estimate_kv_bytes_per_token(facts, kv_dtype, tp),
                "estimated": estimated,
                "logged": logged,
                "ratio": logged / estimated if logged is not None and estimated else None,
            }
        )
    return rows


def main(argv: list[str]) -> int:
    """Print the comparison; the corpus directory may be given as the only argument."""
    corpus = Path(argv[0]) if argv else CORPUS
    for row in compare(corpus):
        print(f"{row['log']}\n  vs {row['config']}\n  ({row['why']})")
        for column in COLUMNS[2:]:
            value = row[column]
            print(f"  {column:<12} {'-' if value is None else value}")
        ratio = row["ratio"]
        shown = f"{ratio:.4f}" if isinstance(ratio, float) else "- (the log states no KV GiB)"
        print(f"  {'logged/est.':<12} {shown}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
