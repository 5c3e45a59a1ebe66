"""Models on a simulated host: directories and GGUF files, with PROVENANCE.txt siblings.

A model directory has a real config.json, sparse placeholder shards whose sizes stand for
the real checkpoint and a safetensors index. A GGUF model is one file with a real header
(the architecture's metadata as llama.cpp's converter writes it, and every tensor's info
with its Q4_K_M / Q8_0 type) followed by a sparse hole of zeros as tensor data, so its
size is the real file's while it takes a few kilobytes of disk. The gemma3 and qwen35moe
architectures' own keys and tensors are `tests.lab.gguf_archs`'. The catalog and authored
files are in tests/lab/models/ (see its README.md).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from tests.lab import gguf_archs

MODELS_SRC = Path(__file__).resolve().parent / "models"
GiB = 1 << 30
ALIGNMENT = 32
NOT_GGUF = (
    b"<!DOCTYPE html>\n<html><head><title>401 Unauthorized</title></head>\n"
    b"<body>Access to model Qwen/Qwen3-8B-GGUF is restricted.</body></html>\n"
)


def catalog() -> dict[str, dict[str, object]]:
    """Every model the lab knows: config source, checkpoint size, shard count."""
    return json.loads((MODELS_SRC / "catalog.json").read_text())


def architectures() -> dict[str, dict[str, Any]]:
    """The GGUF models' hyper-parameters (from their public config.json)."""
    return json.loads((MODELS_SRC / "gguf-architectures.json").read_text())


def config_source(ref: str, corpus: Path) -> Path:
    """Resolve `corpus:<file>` / `lab:<file>` to a path."""
    kind, _, name = ref.partition(":")
    base = corpus / "model-configs" if kind == "corpus" else MODELS_SRC
    path = base / name
    if not path.is_file():
        raise FileNotFoundError(f"model config {path} not found (is tests/corpus complete?)")
    return path


def write_shards(model_dir: Path, total: int, shards: int) -> None:
    """Sparse shards adding up to `total` bytes, plus the safetensors index."""
    names = [f"model-{i:05d}-of-{shards:05d}.safetensors" for i in range(1, shards + 1)]
    for i, name in enumerate(names):
        size = total // shards + (total % shards if i == 0 else 0)
        with (model_dir / name).open("wb") as shard:
            os.ftruncate(shard.fileno(), size)
    index = {"metadata": {"total_size": total}, "weight_map": {"lm_head.weight": names[-1]}}
    (model_dir / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))


def more_bits(layer: int, n_layer: int) -> bool:
    """llama-quantize's use_more_bits: the layers Q4_K_M gives Q6_K attn_v / ffn_down."""
    eighth = n_layer // 8
    return layer < eighth or layer >= 7 * n_layer // 8 or (layer - eighth) % 3 == 2


def _typer(file_type: str, n_layer: int) -> gguf_archs.Typer:
    """The ggml type llama-quantize gives a matrix of a kind in a layer (Q4_K_M, Q8_0)."""

    def mat(kind: str, layer: int) -> str:
        if file_type == "Q8_0":
            return "Q8_0"
        if kind == "output" or (kind in ("attn_v", "ffn_down") and more_bits(layer, n_layer)):
            return "Q6_K"
        return "Q4_K"

    return mat


def tensor_plan(arch: dict[str, Any], file_type: str) -> list[tuple[str, tuple[int, ...], str]]:
    """(name, numpy-order shape, ggml type name) of every tensor of a llama-like model."""
    e, f, v = arch["embedding_length"], arch["feed_forward_length"], arch["vocab_size"]
    q, kv, d = (
        arch["head_count"] * arch["head_dim"],
        arch["head_count_kv"] * arch["head_dim"],
        arch["head_dim"],
    )
    tied, n = arch["tie_word_embeddings"], arch["block_count"]
    mat = _typer(file_type, n)
    if arch["architecture"] in gguf_archs.BLOCKS:
        return gguf_archs.tensor_plan(arch, mat)
    out = [("token_embd.weight", (v, e), mat("output" if tied else "embd", 0))]
    for i in range(n):
        b = f"blk.{i}"
        out += [
            (f"{b}.attn_norm.weight", (e,), "F32"),
            (f"{b}.attn_q.weight", (q, e), mat("attn_q", i)),
            (f"{b}.attn_k.weight", (kv, e), mat("attn_k", i)),
            (f"{b}.attn_v.weight", (kv, e), mat("attn_v", i)),
            (f"{b}.attn_output.weight", (e, q), mat("attn_output", i)),
            (f"{b}.attn_q_norm.weight", (d,), "F32"),
            (f"{b}.attn_k_norm.weight", (d,), "F32"),
            (f"{b}.ffn_norm.weight", (e,), "F32"),
            (f"{b}.ffn_gate.weight", (f, e), mat("ffn_gate", i)),
            (f"{b}.ffn_up.weight", (f, e), mat("ffn_up", i)),
            (f"{b}.ffn_down.weight", (e, f), mat("ffn_down", i)),
        ]
    out.append(("output_norm.weight", (e,), "F32"))
    if not tied:
        out.append(("output.weight", (v, e), mat("output", 0)))
    return out


def add_metadata(writer: Any, arch: dict[str, Any], file_type: str) -> None:
    """The key-value pairs llama.cpp's converter writes for the architecture."""
    import gguf

    writer.add_type("model")
    writer.add_name(arch["name"])
    writer.add_basename(arch["basename"])
    writer.add_size_label(arch["size_label"])
    writer.add_license(arch.get("license", "apache-2.0"))
    writer.add_block_count(arch["block_count"])
    writer.add_context_length(arch["context_length"])
    writer.add_embedding_length(arch["embedding_length"])
    writer.add_feed_forward_length(arch["feed_forward_length"])
    writer.add_head_count(arch["head_count"])
    writer.add_head_count_kv(arch["head_count_kv"])
    writer.add_rope_freq_base(arch["rope_freq_base"])
    writer.add_layer_norm_rms_eps(arch["rms_norm_eps"])
    writer.add_key_length(arch["head_dim"])
    writer.add_value_length(arch["head_dim"])
    if arch["architecture"] in gguf_archs.BLOCKS:
        gguf_archs.add_metadata(writer, arch)
    writer.add_file_type(gguf.LlamaFileType[f"MOSTLY_{file_type}"])
    writer.add_tokenizer_model(arch.get("tokenizer_model", "gpt2"))
    writer.add_tokenizer_pre(arch.get("tokenizer_pre", "qwen2"))
    writer.add_eos_token_id(arch["eos_token_id"])
    writer.add_pad_token_id(arch["bos_token_id"])
    writer.add_bos_token_id(arch["bos_token_id"])
    writer.add_add_bos_token(bool(arch.get("add_bos_token", False)))
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)


def write_gguf(path: Path, arch: dict[str, Any], file_type: str) -> int:
    """A GGUF file with a real header and sparse zero tensor data; returns its size."""
    import gguf
    import numpy as np

    writer = gguf.GGUFWriter(path, arch["architecture"])
    add_metadata(writer, arch, file_type)
    data = 0
    for name, shape, type_name in tensor_plan(arch, file_type):
        qtype = gguf.GGMLQuantizationType[type_name]
        block, size = gguf.GGML_QUANT_SIZES[qtype]
        nbytes = int(np.prod(shape)) // block * size
        writer.add_tensor_info(name, shape, np.dtype(np.float32), nbytes, raw_dtype=qtype)
        data += -(-nbytes // ALIGNMENT) * ALIGNMENT
    writer.write_header_to_file(path)
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    assert writer.fout is not None
    header = writer.fout[0].tell()
    writer.close()
    total = -(-header // ALIGNMENT) * ALIGNMENT + data
    os.truncate(path, total)
    return total


def write_model(models_dir: Path, name: str, entry: dict[str, object], corpus: Path) -> None:
    """One model (directory or GGUF file) and its provenance sibling."""
    target = models_dir / name
    if target.is_dir():
        shutil.rmtree(target)
    target.unlink(missing_ok=True)
    if "gguf" in entry:
        write_gguf(target, architectures()[str(entry["gguf"])], str(entry["file_type"]))
    elif "not_gguf" in entry:
        target.write_bytes(NOT_GGUF)
    else:
        target.mkdir(parents=True)
        shutil.copyfile(config_source(str(entry["config"]), corpus), target / "config.json")
        weights = int(float(str(entry["weights_gib"])) * GiB)
        write_shards(target, weights, int(str(entry["shards"])))
    provenance = MODELS_SRC / "provenance" / f"{name}.PROVENANCE.txt"
    if provenance.is_file():
        shutil.copyfile(provenance, models_dir / f"{name}.PROVENANCE.txt")


def populate(models_dir: Path, names: tuple[str, ...], corpus: Path) -> None:
    """Write the named models into a host's models folder."""
    models_dir.mkdir(parents=True, exist_ok=True)
    entries = catalog()
    for name in names:
        write_model(models_dir, name, entries[name], corpus)
