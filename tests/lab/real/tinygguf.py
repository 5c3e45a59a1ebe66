"""Tiny GGUF models for the real llama-server: llama architecture, random F16 weights and
the real Llama-2 SentencePiece vocabulary, written with llama.cpp's own `gguf` package.

The target (`tiny-llama-4l.gguf`: 4 layers, hidden 256, about 38 MB) and a drafter with
the same vocabulary (`tiny-llama-draft-1l.gguf`: 1 layer, hidden 64, about 9 MB, so
llama-server accepts it as a draft model for the target) are made once and cached under
`<cache>/llama-server-b11434/models/`. The weights come from a seeded generator and the
vocabulary from the llama.cpp source tree's `models/ggml-vocab-llama-spm.gguf` (installed
next to the binary), so the files have the same bytes on every run and every machine:
`python -m tests.lab.real.tinygguf` prints their sha256.
"""

from __future__ import annotations

import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.lab.real import CACHE

VOCAB_FILE = "ggml-vocab-llama-spm.gguf"
CONTEXT_TRAIN = 2048


@dataclass(frozen=True)
class TinyLlama:
    """The shape of one tiny model."""

    name: str
    layers: int
    hidden: int
    heads: int
    ffn: int
    seed: int


TARGET = TinyLlama("tiny-llama-4l.gguf", layers=4, hidden=256, heads=4, ffn=512, seed=11434)
DRAFTER = TinyLlama("tiny-llama-draft-1l.gguf", layers=1, hidden=64, heads=2, ffn=128, seed=7)


def vocab_tokens(vocab: Path) -> dict[str, tuple[Any, Any, Any]]:
    """The `tokenizer.*` keys of llama.cpp's vocab-only GGUF: value, type, array item type."""
    import gguf

    reader = gguf.GGUFReader(str(vocab))
    keys: dict[str, tuple[Any, Any, Any]] = {}
    for name, field in reader.fields.items():
        if not name.startswith("tokenizer."):
            continue
        vtype = gguf.GGUFValueType(field.types[0])
        sub = gguf.GGUFValueType(field.types[1]) if len(field.types) > 1 else None
        keys[name] = (field.contents(), vtype, sub)
    return keys


def _tensors(model: TinyLlama, vocab_size: int) -> list[tuple[str, tuple[int, ...]]]:
    """Tensor names and numpy shapes (rows, columns) as llama.cpp's converter writes them."""
    e, f = model.hidden, model.ffn
    out: list[tuple[str, tuple[int, ...]]] = [("token_embd.weight", (vocab_size, e))]
    for i in range(model.layers):
        b = f"blk.{i}"
        out += [
            (f"{b}.attn_norm.weight", (e,)),
            (f"{b}.attn_q.weight", (e, e)),
            (f"{b}.attn_k.weight", (e, e)),
            (f"{b}.attn_v.weight", (e, e)),
            (f"{b}.attn_output.weight", (e, e)),
            (f"{b}.ffn_norm.weight", (e,)),
            (f"{b}.ffn_gate.weight", (f, e)),
            (f"{b}.ffn_up.weight", (f, e)),
            (f"{b}.ffn_down.weight", (e, f)),
        ]
    return [*out, ("output_norm.weight", (e,)), ("output.weight", (vocab_size, e))]


def write_model(path: Path, model: TinyLlama, vocab: Path) -> None:
    """Write one tiny model (norms F32 ones, matrices F16 random) to `path`."""
    import gguf
    import numpy as np

    tokens = vocab_tokens(vocab)
    vocab_size = len(tokens["tokenizer.ggml.tokens"][0])
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name(model.name.removesuffix(".gguf"))
    writer.add_block_count(model.layers)
    writer.add_context_length(CONTEXT_TRAIN)
    writer.add_embedding_length(model.hidden)
    writer.add_feed_forward_length(model.ffn)
    writer.add_head_count(model.heads)
    writer.add_head_count_kv(model.heads)
    writer.add_rope_dimension_count(model.hidden // model.heads)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(vocab_size)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    for key, (value, vtype, sub) in tokens.items():
        writer.add_key_value(key, value, vtype, sub_type=sub)
    rng = np.random.default_rng(model.seed)
    for name, shape in _tensors(model, vocab_size):
        if len(shape) == 1:
            writer.add_tensor(name, np.ones(shape, dtype=np.float32))
        else:
            weights = rng.normal(0.0, 0.02, size=shape).astype(np.float16)
            writer.add_tensor(name, weights)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def cached(model: TinyLlama, cache: Path = CACHE) -> Path:
    """The model's file, written on first use (atomically: a crash leaves no half file)."""
    home = cache / "llama-server-b11434"
    path = home / "models" / model.name
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        part = path.with_name(f".{path.name}.{os.getpid()}.part")
        write_model(part, model, home / VOCAB_FILE)
        part.replace(path)
    return path


def sha256(path: Path) -> str:
    """The file's sha256, to show it is the same on every run."""
    digest = hashlib.sha256()
    with path.open("rb") as fp:
        while chunk := fp.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


if __name__ == "__main__":
    for each in (TARGET, DRAFTER):
        made = cached(each)
        sys.stdout.write(f"{made} {made.stat().st_size} {sha256(made)}\n")
