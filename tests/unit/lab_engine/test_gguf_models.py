"""The lab's GGUF model files: real headers (read alike by llama.cpp's gguf package, fleet's
header parser and the stand-in's own reader) over sparse tensor data, so a file has the
real model's size while it takes a few kilobytes of disk."""

from __future__ import annotations

from pathlib import Path

import gguf
import pytest

from fleet.facts.gguf import parse_gguf_header
from fleet.facts.host_facts import GGUF_HEAD_BYTES
from tests.lab.engine.llamacpp import gguf as standin_gguf

EXPECTED = {
    "qwen3-8b-q4_k_m.gguf": (36, 4096, 32, "Q4_K_M", 399),
    "qwen3-0.6b-q4_k_m.gguf": (28, 1024, 16, "Q4_K_M", 310),
    "qwen3-0.6b-q8_0.gguf": (28, 1024, 16, "Q8_0", 310),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_headers_are_real_and_the_data_is_a_sparse_hole(gguf_dir: Path, name: str) -> None:
    path = gguf_dir / name
    layers, embd, heads, file_type, tensors = EXPECTED[name]
    with path.open("rb") as fp:
        facts = parse_gguf_header(fp.read(GGUF_HEAD_BYTES))
    assert facts.complete, "fleet reads the whole header from the file's head"
    assert (facts.architecture, facts.block_count, facts.context_length) == ("qwen3", layers, 40960)
    assert (facts.embedding_length, facts.head_count, facts.head_count_kv) == (embd, heads, 8)
    assert (facts.file_type, facts.tensor_count) == (file_type, tensors)
    reader = gguf.GGUFReader(str(path))
    assert int(reader.fields["qwen3.attention.key_length"].parts[-1][0]) == 128
    ours = standin_gguf.read_gguf(path)
    assert ours.hparam("attention.key_length") == 128
    assert [(t.name, t.nbytes) for t in ours.tensors] == [
        (t.name, int(t.n_bytes)) for t in reader.tensors
    ]
    last = reader.tensors[-1]
    assert path.stat().st_size == last.data_offset + last.n_bytes
    assert path.stat().st_size > 300 << 20
    assert path.stat().st_blocks * 512 < 1 << 20, "sparse"


def test_the_standins_type_table_agrees_with_ggml(gguf_dir: Path) -> None:
    for number, (name, block, size) in standin_gguf.GGML_TYPES.items():
        qtype = gguf.GGMLQuantizationType(number)
        assert qtype.name.lower() == name.lower()
        assert gguf.GGML_QUANT_SIZES[qtype] == (block, size)


def test_the_broken_download_is_no_gguf(gguf_dir: Path) -> None:
    path = gguf_dir / "not-a-model.gguf"
    assert not parse_gguf_header(path.read_bytes()).complete
    with pytest.raises(standin_gguf.GgufError, match="invalid magic characters"):
        standin_gguf.read_gguf(path)
