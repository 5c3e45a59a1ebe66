"""Compare what plan predicts vLLM will log with what vLLM logged, on the recorded corpus.

For every log in tests/corpus/vllm-logs whose model's attention geometry is known (a
config.json of the corpus: the same model, or one of the same geometry, each pair listed
by hand below with why it fits; or, where the corpus holds no config of the model, its
published geometry stated below, marked `stated`), and every recording of the real
vLLM in tests/corpus/vllm-cpu-kv (its log beside its model's config.json), lay the KV
cache out as plan does (`fleet.plan.seat_layout.log_layout`: groups, padding, the shared
block pool, the block size vLLM picks, a drafter's layers, the defaults of the log's
release and platform) at the KV memory the log states, and print both figures vLLM
prints beside the logged ones: `GPU KV cache size` (tokens) and `Maximum
concurrency` at the log's context, each as logged / estimated. Then, per kind of seat
(attention kind, tensor or pipeline parallel, fp8 KV, a drafter), the largest error, and
every kind outside 5% or with no log to measure it. Run:
`.venv/bin/python bench/kv_estimate_report.py [CORPUS]`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from fleet.engines import vllm
from fleet.engines.vllm.log import EngineReport, parse_vllm_log
from fleet.facts.kv_estimate import GIB, NO_KV_DRAFTERS
from fleet.facts.model_config import AttentionKind, ModelFacts, parse_model_config
from fleet.plan.seat_layout import log_layout

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "corpus"
TARGET = 0.05  # both figures within 5% of the logged ones
SEAT_KINDS = ("tensor-parallel", "pipeline-parallel", "fp8-kv", "drafter")

# (log, config file in model-configs/, why they match)
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
    (
        "v0.19.0_v1_qwen3.5-9b_hybrid-gdn-vlm-text_config_offline-LLM_l40s.log",
        "qwen3.5-9b_hybrid-linear-attention_nested-text_config_vlm.config.json",
        "the same Qwen3.5-9B (24 Gated-DeltaNet + 8 full-attention layers)",
    ),
)


def _qwen(layers: int, kv_heads: int) -> dict[str, object]:
    return {
        "model_type": "qwen3",
        "num_hidden_layers": layers,
        "num_key_value_heads": kv_heads,
        "head_dim": 128,
    }


# (log, the model's published attention geometry, where it is stated)
STATED = (
    (
        "v0.24.0_v1-mrv2_qwen3-8b_eagle3_spec-decode.log",
        _qwen(36, 8),
        "Qwen/Qwen3-8B config.json: 36 layers, 8 KV heads, head_dim 128; its EAGLE3 head "
        "is one more decoder layer of the same geometry",
    ),
    (
        "v0.18.0_v1_qwen3-8b-awq_awq-marlin-quantization.log",
        _qwen(36, 8),
        "Qwen/Qwen3-8B config.json (AWQ quantizes weights only)",
    ),
    (
        "v0.9.2_v1_qwen3-14b_tp4_multiproc-workers.log",
        _qwen(40, 8),
        "Qwen/Qwen3-14B config.json: 40 layers, 8 KV heads, head_dim 128",
    ),
    (
        "v0.11.2_v1_qwen2.5-coder-14b_single-gpu.log",
        _qwen(48, 8),
        "Qwen/Qwen2.5-Coder-14B-Instruct config.json: 48 layers, 8 KV heads, 40 heads "
        "of 5120 / 40 = 128",
    ),
    (
        "v0.17.0_v1_qwen2.5-7b_rocm_banner.log",
        _qwen(28, 4),
        "Qwen/Qwen2.5-7B-Instruct config.json: 28 layers, 4 KV heads, 28 heads of 3584 / 28 = 128",
    ),
)

SHOWN = ("kinds", "tp", "kv dtype", "kv GiB", "logged", "estimate", "tokens l/e")
SHOWN += ("context", "logged max", "est. max", "max l/e")


def compare(corpus: Path) -> list[dict[str, object]]:
    """One row per pair: the log's two figures, the estimate's, and their ratios."""
    rows = []
    for log_name, config_name, why in PAIRS:
        facts = parse_model_config((corpus / "model-configs" / config_name).read_text())
        rows.append(_row(corpus / "vllm-logs", log_name, config_name, facts, why))
    for log_name, geometry, why in STATED:
        facts = parse_model_config(json.dumps(geometry))
        rows.append(_row(corpus / "vllm-logs", log_name, "stated", facts, why))
    return rows + recorded(corpus / "vllm-cpu-kv")


def recorded(folder: Path) -> list[dict[str, object]]:
    """The real vLLM's recordings (tests/lab/real/record_kv.py): each case's log and config."""
    if not (folder / "cases.json").exists():
        return []
    cases = json.loads((folder / "cases.json").read_text())["cases"]
    why = "recorded from the real vLLM 0.32 CPU build on this model (tests/lab/real/record_kv.py)"
    return [
        _row(
            folder,
            f"{case}.log",
            spec["config"],
            parse_model_config((folder / spec["config"]).read_text()),
            why,
        )
        for case, spec in sorted(cases.items())
        if (folder / f"{case}.log").exists()
    ]


def _row(
    folder: Path, log_name: str, config: str, facts: ModelFacts, why: str
) -> dict[str, object]:
    report = parse_vllm_log((folder / log_name).read_text())
    layout = log_layout(facts, report, vllm)
    tokens = most = None
    context = report.max_model_len
    if layout is not None and report.kv_cache_gib is not None:
        budget = int(report.kv_cache_gib * GIB)
        tokens = layout.tokens(budget, context)
        most = round(layout.max_concurrency(budget, context), 2) if context else None
    return {
        "log": log_name,
        "config": config,
        "why": why,
        "kinds": kinds_of(facts, report),
        "tp": report.tensor_parallel_size or 1,
        "kv dtype": report.kv_cache_dtype or "auto",
        "kv GiB": report.kv_cache_gib,
        "logged": report.kv_cache_tokens,
        "estimate": tokens,
        "tokens l/e": _ratio(report.kv_cache_tokens, tokens),
        "context": context,
        "logged max": report.max_concurrency,
        "est. max": most,
        "max l/e": _ratio(report.max_concurrency, most),
    }


def kinds_of(facts: ModelFacts, report: EngineReport) -> tuple[str, ...]:
    """The kinds of seat a pair measures: its attention kind and what else changes the layout."""
    kinds = [str(facts.attention.kind or AttentionKind.FULL)]
    kinds += ["tensor-parallel"] if (report.tensor_parallel_size or 1) > 1 else []
    kinds += ["pipeline-parallel"] if (report.pipeline_parallel_size or 1) > 1 else []
    kinds += ["fp8-kv"] if (report.kv_cache_dtype or "").startswith("fp8") else []
    spec = report.speculative
    kinds += ["drafter"] if spec and spec.method not in (None, *NO_KV_DRAFTERS) else []
    return tuple(kinds)


def _ratio(logged: float | None, estimated: float | None) -> float | None:
    return round(logged / estimated, 4) if logged is not None and estimated else None


def summary(rows: list[dict[str, object]]) -> list[str]:
    """The largest error of either figure per kind; the kinds outside 5% or unmeasured."""
    errors: dict[str, list[float]] = {}
    for row in rows:
        found = [abs(r - 1) for r in (row["tokens l/e"], row["max l/e"]) if isinstance(r, float)]
        for kind in row["kinds"] if found else ():  # type: ignore[attr-defined]
            errors.setdefault(str(kind), []).append(max(found))
    lines = [
        f"  {kind:<18} {len(found)} log(s), largest error {max(found):.2%}"
        for kind, found in sorted(errors.items())
    ]
    outside = sorted(k for k, found in errors.items() if max(found) > TARGET)
    lines.append(f"  outside {TARGET:.0%}: {', '.join(outside) or 'none'}")
    known = [*(str(k) for k in AttentionKind), *SEAT_KINDS]
    missing = sorted(k for k in known if k not in errors)
    unmeasured = ", ".join(missing)
    lines.append(f"  not measured (no corpus log with its geometry and KV GiB): {unmeasured}")
    return lines


def unpaired(corpus: Path) -> list[str]:
    """The corpus logs no pair covers."""
    paired = {log for log, _, _ in PAIRS} | {log for log, _, _ in STATED}
    return sorted(p.name for p in (corpus / "vllm-logs").glob("*.log") if p.name not in paired)


def main(argv: list[str]) -> int:
    """Print the comparison; the corpus directory may be given as the only argument."""
    corpus = Path(argv[0]) if argv else CORPUS
    rows = compare(corpus)
    for row in rows:
        print(f"{row['log']}\n  vs {row['config']}\n  ({row['why']})")
        for column in SHOWN:
            value = row[column]
            if isinstance(value, tuple):
                value = ", ".join(value)
            print(f"  {column:<12} {'-' if value is None else value}")
        if row["kv GiB"] is None:
            print("  (the log states no KV GiB: nothing to estimate from)")
        print()
    print("Logs no pair covers:")
    print("\n".join(f"  {name}" for name in unpaired(corpus)))
    print("\nEstimate against the logged figures (tokens and maximum concurrency):")
    print("\n".join(summary(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
