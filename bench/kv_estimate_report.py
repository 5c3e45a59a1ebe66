"""Compare the KV tokens plan predicts with the tokens vLLM logged, on the recorded corpus.

For every log in tests/corpus/vllm-logs: if the corpus holds the config of the same model
(or of one with the same attention geometry; the pairs are listed by hand below, each with
why the config fits the log), print the per-GPU KV memory the log states, the bytes per
token, the plain quotient `fleet explain log --model` shows (`estimated`), the `estimate`
plan makes from the config (`plan est.`: `fleet.facts.kv_estimate.kv_layout`, whole blocks
as vLLM lays out its KV cache), the `exact` figure plan reuses from a log of the same
configuration, the logged tokens, and the plan estimate's error. Then the median and
largest error per attention kind and overall, and every kind outside 10% or unmeasured.
Run: `.venv/bin/python bench/kv_estimate_report.py [CORPUS]`.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from fleet.engines.vllm.log import EngineReport, parse_vllm_log
from fleet.facts.kv_estimate import (
    GIB,
    estimate_kv_bytes_per_token,
    estimate_kv_tokens,
    kv_layout,
)
from fleet.facts.model_config import AttentionKind, parse_model_config

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "corpus"
TARGET = 0.10  # an estimate within 10% of the logged tokens

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
    (
        "v0.6.3.post1_v0_qwen2.5-32b_tp4_gpu-blocks.log",
        "qwen3-32b_dense.config.json",
        "Qwen2.5-32B and Qwen3-32B share the attention geometry (64 layers, 8 KV heads, "
        "head_dim 128)",
    ),
)

COLUMNS = ("log", "config", "tp", "kv dtype", "kv GiB", "B/token/GPU", "estimated", "logged")
SHOWN = (*COLUMNS[2:], "plan est.", "exact")


def compare(corpus: Path) -> list[dict[str, object]]:
    """One row per pair: the log's figures, both predictions and the error (None if unknown)."""
    rows = []
    for log_name, config_name, why in PAIRS:
        report = parse_vllm_log((corpus / "vllm-logs" / log_name).read_text())
        facts = parse_model_config((corpus / "model-configs" / config_name).read_text())
        kv_dtype = report.kv_cache_dtype or "auto"
        tp = report.tensor_parallel_size or 1
        layout = kv_layout(facts, kv_dtype, tp, report.pipeline_parallel_size or 1)
        estimated = planned = None
        if report.kv_cache_gib is not None:
            estimated = estimate_kv_tokens(facts, report.kv_cache_gib, kv_dtype, tp)
            planned = layout.tokens(int(report.kv_cache_gib * GIB)) if layout else None
        logged = report.kv_cache_tokens
        ratio = logged / estimated if logged is not None and estimated else None
        rows.append(
            {
                "log": log_name,
                "config": config_name,
                "why": why,
                "kind": facts.attention.kind or AttentionKind.FULL,
                "tp": tp,
                "kv dtype": kv_dtype,
                "kv GiB": report.kv_cache_gib,
                "B/token/GPU": estimate_kv_bytes_per_token(facts, kv_dtype, tp),
                "estimated": estimated,
                "plan est.": planned,
                "exact": exact_tokens(report),
                "logged": logged,
                "ratio": ratio,
                "error": abs(planned - logged) / logged if planned and logged else None,
            }
        )
    return rows


def exact_tokens(report: EngineReport) -> int | None:
    """What plan predicts from a log of the same configuration: the tokens it states."""
    return report.kv_cache_tokens if report.kv_cache_gib is not None else None


def unpaired(corpus: Path) -> list[str]:
    """The corpus logs no config of the corpus fits."""
    paired = {log for log, _, _ in PAIRS}
    return sorted(p.name for p in (corpus / "vllm-logs").glob("*.log") if p.name not in paired)


def summary(rows: list[dict[str, object]]) -> list[str]:
    """Median and largest error per attention kind; the kinds outside the target or unmeasured."""
    errors: dict[str, list[float]] = {}
    for row in rows:
        error = row["error"]
        if isinstance(error, float):
            errors.setdefault(str(row["kind"]), []).append(error)
    lines = []
    for kind, found in sorted(errors.items()):
        lines.append(
            f"  {kind:<15} {len(found)} log(s), median {statistics.median(found):.3%}, "
            f"max {max(found):.3%}"
        )
    every = [e for found in errors.values() for e in found]
    if every:
        lines.append(f"  {'all':<15} median {statistics.median(every):.3%}, max {max(every):.3%}")
    outside = sorted(k for k, found in errors.items() if max(found) > TARGET)
    lines.append(f"  outside {TARGET:.0%}: {', '.join(outside) or 'none'}")
    missing = sorted(str(k) for k in AttentionKind if str(k) not in errors)
    lines.append(f"  not measured (no corpus log with its config and KV GiB): {', '.join(missing)}")
    return lines


def exact_lines(corpus: Path) -> list[str]:
    """Every corpus log that states KV memory and tokens: the exact figure against it."""
    found = []
    for path in sorted((corpus / "vllm-logs").glob("*.log")):
        report = parse_vllm_log(path.read_text())
        exact = exact_tokens(report)
        if exact is not None:
            found.append(exact == report.kv_cache_tokens)
    return [f"  exact: {sum(found)} of {len(found)} logs stating KV GiB and tokens reproduced"]


def main(argv: list[str]) -> int:
    """Print the comparison; the corpus directory may be given as the only argument."""
    corpus = Path(argv[0]) if argv else CORPUS
    rows = compare(corpus)
    for row in rows:
        print(f"{row['log']}\n  vs {row['config']}\n  ({row['why']})")
        for column in SHOWN:
            value = row[column]
            print(f"  {column:<12} {'-' if value is None else value}")
        ratio, error = row["ratio"], row["error"]
        shown = f"{ratio:.4f}" if isinstance(ratio, float) else "- (the log states no KV GiB)"
        print(f"  {'logged/est.':<12} {shown}")
        print(f"  {'error':<12} {error:.3%}\n" if isinstance(error, float) else "")
    print("Logs with no config of their model in the corpus:")
    print("\n".join(f"  {name}" for name in unpaired(corpus)))
    print("\nEstimate against logged KV tokens:")
    print("\n".join(summary(rows) + exact_lines(corpus)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
