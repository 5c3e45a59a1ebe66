"""Tiny gemma3 and qwen35moe GGUF models for the real llama-server: the KV layouts of the
lab's stand-in models (interleaved sliding windows; a Gated DeltaNet hybrid, with and
without a multi-token-prediction block) at a size the CPU build loads in a second.

The tensors and keys are the lab's own (`tests.lab.gguf_archs`, as llama.cpp's converter
writes them), the vocabulary the real Llama-2 SentencePiece one that `tinygguf` uses, the
weights seeded random F16 (norms F32 ones), so every run writes the same bytes. The same
`ARCHS` entries, written by `tests.lab.models.write_gguf` (sparse, no vocabulary), give
the stand-in the same headers: tests/unit/lab_engine/test_llamacpp_contract.py compares
what the two log (tests/corpus/llamacpp-logs/b11434_cpu_tiny-*, recorded by
`tests.lab.real.record_llamacpp_archs`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.lab import gguf_archs, models
from tests.lab.real import tinygguf

_COMMON: dict[str, Any] = {
    "size_label": "?B",
    "embedding_length": 256,
    "head_count": 4,
    "rms_norm_eps": 1e-6,
    "vocab_size": 32000,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "tokenizer_model": "llama",
    "tokenizer_pre": "default",
}
# gemma3: llama.cpp's pattern makes layers 0-4 slide over the window, layer 5 attend fully.
GEMMA3: dict[str, Any] = {
    **_COMMON,
    "architecture": "gemma3",
    "name": "tiny-gemma3",
    "basename": "tiny-gemma3",
    "block_count": 6,
    "context_length": 32768,
    "feed_forward_length": 512,
    "head_count_kv": 1,
    "head_dim": 128,
    "sliding_window": 512,
    "rope_freq_base": 1000000.0,
    "tie_word_embeddings": True,
}
# qwen35moe: every 4th of 8 layers attends fully, the rest are Gated DeltaNet layers.
QWEN35MOE: dict[str, Any] = {
    **_COMMON,
    "architecture": "qwen35moe",
    "name": "tiny-qwen35moe",
    "basename": "tiny-qwen35moe",
    "block_count": 8,
    "context_length": 262144,
    "feed_forward_length": 0,
    "head_count_kv": 2,
    "head_dim": 64,
    "expert_count": 4,
    "expert_used_count": 2,
    "expert_feed_forward_length": 128,
    "shared_ffn": 128,
    "rope_dimension_count": 16,
    "rope_dimension_sections": [3, 3, 2, 0],
    "ssm_conv_kernel": 4,
    "ssm_state_size": 32,
    "ssm_group_count": 2,
    "ssm_time_step_rank": 4,
    "ssm_inner_size": 128,
    "full_attention_interval": 4,
    "rope_freq_base": 10000000.0,
    "tie_word_embeddings": False,
}
# The same trunk and one MTP block after it (block_count counts it, as the converter does).
QWEN35MOE_MTP: dict[str, Any] = {
    **QWEN35MOE,
    "name": "tiny-qwen35moe-mtp",
    "block_count": 9,
    "nextn_predict_layers": 1,
}
ARCHS = {
    "tiny-gemma3.gguf": GEMMA3,
    "tiny-qwen35moe.gguf": QWEN35MOE,
    "tiny-qwen35moe-mtp.gguf": QWEN35MOE_MTP,
}
TOKENIZER_OWN = (  # keys add_metadata writes itself; the vocabulary's others are copied
    "tokenizer.ggml.model",
    "tokenizer.ggml.pre",
    "tokenizer.ggml.bos_token_id",
    "tokenizer.ggml.eos_token_id",
    "tokenizer.ggml.padding_token_id",
    "tokenizer.ggml.add_bos_token",
)
SEED = 11434


def write_model(path: Path, arch: dict[str, Any], vocab: Path) -> None:
    """One tiny model with real weights bytes (seeded) and the vocabulary of `vocab`."""
    import gguf
    import numpy as np

    writer = gguf.GGUFWriter(str(path), arch["architecture"])
    models.add_metadata(writer, arch, "F16")
    for key, (value, vtype, sub) in tinygguf.vocab_tokens(vocab).items():
        if key not in TOKENIZER_OWN:
            writer.add_key_value(key, value, vtype, sub_type=sub)
    rng = np.random.default_rng(SEED)
    for name, shape, type_name in gguf_archs.tensor_plan(arch, lambda _kind, _layer: "F16"):
        if type_name == "F32":
            writer.add_tensor(name, np.ones(shape, dtype=np.float32))
        else:
            writer.add_tensor(name, rng.normal(0.0, 0.02, size=shape).astype(np.float16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def cached(name: str) -> Path:
    """The model's file under the real llama-server's models folder, written on first use."""
    home = tinygguf.CACHE / "llama-server-b11434"
    path = home / "models" / name
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f".{path.name}.part")
        write_model(part, ARCHS[name], home / tinygguf.VOCAB_FILE)
        part.replace(path)
    return path
