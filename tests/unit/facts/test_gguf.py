"""The GGUF header parser, on files written by the `gguf` package (llama.cpp's own writer)
and on the head of such files, as the fact script sends it."""

from __future__ import annotations

import base64
from pathlib import Path

import gguf
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fleet.facts.gguf import FILE_TYPES, GgufFacts, parse_gguf_base64, parse_gguf_header
from fleet.facts.host_facts import GGUF_HEAD_BYTES
from fleet.facts.kv_estimate import estimate_kv_bytes_per_token
from fleet.facts.model_config import parse_model_config
from tests.conftest import CORPUS
from tests.fakes.units import gguf_file


def write(path: Path, arch: str, ftype: int, vocab: int = 0, **numbers: int) -> bytes:
    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_name(f"tiny-{arch}")
    writer.add_block_count(numbers.get("layers", 28))
    writer.add_context_length(numbers.get("context", 40960))
    writer.add_embedding_length(numbers.get("embedding", 2048))
    writer.add_head_count(numbers.get("heads", 16))
    writer.add_head_count_kv(numbers.get("kv_heads", 8))
    if "experts" in numbers:
        writer.add_expert_count(numbers["experts"])
    writer.add_file_type(ftype)
    if vocab:
        writer.add_token_list([f"token-{i}" for i in range(vocab)])
    writer.add_tensor("blk.0.attn_q.weight", np.zeros((8, 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path.read_bytes()


CASES = [
    ("qwen3-q4km", "qwen3", 15, {}, "Q4_K_M"),
    ("llama-q8", "llama", 7, {"layers": 32, "context": 131072, "heads": 32}, "Q8_0"),
    ("moe-f16", "qwen3moe", 1, {"experts": 128, "layers": 48}, "F16"),
]


@pytest.mark.parametrize(
    ("arch", "ftype", "numbers", "quant"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_header_facts_equal_what_the_writer_wrote(
    tmp_path: Path, arch: str, ftype: int, numbers: dict[str, int], quant: str
) -> None:
    data = write(tmp_path / "m.gguf", arch, ftype, **numbers)
    facts = parse_gguf_header(data)
    reader = gguf.GGUFReader(str(tmp_path / "m.gguf"))
    assert facts.complete and facts.version == 3 and facts.tensor_count == len(reader.tensors)
    assert facts.architecture == arch and facts.name == f"tiny-{arch}"
    assert facts.block_count == numbers.get("layers", 28)
    assert facts.context_length == numbers.get("context", 40960)
    assert (facts.head_count, facts.head_count_kv) == (numbers.get("heads", 16), 8)
    assert facts.expert_count == numbers.get("experts")
    assert facts.file_type == quant
    head_dim = 2048 // numbers.get("heads", 16)
    assert facts.kv_bytes_per_token == 2 * numbers.get("layers", 28) * 8 * head_dim * 2


def test_the_head_of_a_file_with_a_long_vocabulary_is_enough(tmp_path: Path) -> None:
    data = write(tmp_path / "m.gguf", "qwen3", 15, vocab=50_000)
    assert len(data) > 500_000
    head = parse_gguf_base64(base64.b64encode(data[:65536]).decode())
    assert not head.complete  # cut inside the tokenizer's token list
    assert (head.architecture, head.block_count, head.file_type) == ("qwen3", 28, "Q4_K_M")


def test_file_type_names_are_llama_cpps() -> None:
    for member in gguf.LlamaFileType:
        if member.value in FILE_TYPES:
            assert (
                member.name.removeprefix("MOSTLY_").removeprefix("ALL_") == FILE_TYPES[member.value]
            )


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=512))
def test_any_bytes_give_facts(data: bytes) -> None:
    assert isinstance(parse_gguf_header(b"GGUF" + data), GgufFacts)
    assert isinstance(parse_gguf_header(data), GgufFacts)
    assert isinstance(parse_gguf_base64(data.decode("latin-1")), GgufFacts)


def test_head_sizes_come_from_the_header_where_it_has_them(tmp_path: Path) -> None:
    writer = gguf.GGUFWriter(str(tmp_path / "q.gguf"), "qwen3")
    writer.add_block_count(28)
    writer.add_embedding_length(1024)
    writer.add_head_count(16)
    writer.add_head_count_kv(8)
    writer.add_key_length(128)  # qwen3-0.6b: 128, though 1024 / 16 is 64
    writer.add_value_length(128)
    writer.add_tensor("t", np.zeros((2, 2), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    facts = parse_gguf_header((tmp_path / "q.gguf").read_bytes())
    assert (facts.key_length, facts.value_length) == (128, 128)
    assert facts.kv_bytes_per_token == 28 * 8 * (128 + 128) * 2


# The GGUF path against the config.json path on the real configs in tests/corpus: the
# header keys llama.cpp's converter writes for each model (sliding window; the
# linear-attention hybrid's interval and `ssm.*`), and the bytes per token fleet
# estimates from its config.json (`fleet.facts.kv_estimate`, f16). Only full-attention
# layers grow with the context. (id, config file, header keys, full layers, fixed bytes
# per sequence)
CONFIG_CASES = [
    (
        "gemma3-27b-sliding-window",
        "gemma-3-27b-it_sliding-window_nested-text_config.config.json",
        {"architecture": "gemma3", "block_count": 62, "head_count": 32, "head_count_kv": 16,
         "key_length": 128, "value_length": 128, "sliding_window": 1024},
        10,
        52 * 16 * (128 + 128) * 2 * 1024,  # 52 sliding layers at their 1,024-token window
    ),
    (
        "qwen35-27b-hybrid-linear",
        "qwen3.5-27b_hybrid-linear-attention_nested-text_config.config.json",
        {"architecture": "qwen35", "block_count": 64, "head_count": 24, "head_count_kv": 4,
         "key_length": 256, "value_length": 256, "full_attention_interval": 4,
         "ssm_conv_kernel": 4, "ssm_inner_size": 48 * 128, "ssm_state_size": 128,
         "ssm_group_count": 16},
        16,
        # 48 Gated-DeltaNet layers, f32: conv (4 - 1) x (6,144 + 2 x 16 x 128), state 128 x 6,144
        48 * (3 * (6144 + 2 * 16 * 128) + 128 * 6144) * 4,
    ),
    (
        "qwen3-32b-dense",
        "qwen3-32b_dense.config.json",
        {"architecture": "qwen3", "block_count": 64, "head_count": 64, "head_count_kv": 8,
         "key_length": 128, "value_length": 128},
        64,
        0,
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    ("config", "keys", "full", "fixed"),
    [c[1:] for c in CONFIG_CASES],
    ids=[c[0] for c in CONFIG_CASES],
)
def test_a_gguf_counts_only_the_layers_the_config_says_attend_fully(
    config: str, keys: dict[str, object], full: int, fixed: int
) -> None:
    facts = parse_model_config((CORPUS / "model-configs" / config).read_text())
    header = GgufFacts.model_validate(keys)
    assert header.context_layers == full
    assert header.kv_bytes_per_token == estimate_kv_bytes_per_token(facts)
    assert header.kv_fixed_bytes == fixed


# The example fleet's models, as the lab's writer makes them (tests/lab/models.py): what
# their headers say, as fleet reads them from the first 64 KiB. (id, file, architecture,
# layers, full layers, KV bytes per token, fixed bytes per sequence, size in GiB)
EXAMPLE_CASES = [
    ("gemma-3-27b", "gemma-3-27b-it-q4_k_m.gguf", "gemma3", 62, 10, 10 * 16 * 256 * 2,
     52 * 16 * 256 * 2 * 1024, 15.4),
    ("gemma-3-12b", "gemma-3-12b-it-q4_k_m.gguf", "gemma3", 48, 8, 8 * 8 * 512 * 2,
     40 * 8 * 512 * 2 * 1024, 6.79),
    ("qwen3.5-35b-a3b", "qwen3.5-35b-a3b-q8_0.gguf", "qwen35moe", 40, 10, 10 * 2 * 512 * 2,
     30 * (3 * (4096 + 2 * 16 * 128) + 128 * 4096) * 4, 34.36),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "arch", "layers", "full", "per_token", "fixed", "gib"),
    [c[1:] for c in EXAMPLE_CASES],
    ids=[c[0] for c in EXAMPLE_CASES],
)
def test_the_example_fleets_gguf_headers_size_their_kv_cache_by_layer_kind(
    name: str, arch: str, layers: int, full: int, per_token: int, fixed: int, gib: float
) -> None:
    size, head = gguf_file(name)
    header = parse_gguf_header(head[:GGUF_HEAD_BYTES])
    assert header.complete and header.architecture == arch
    assert (header.block_count, header.context_layers) == (layers, full)
    assert (header.kv_bytes_per_token, header.kv_fixed_bytes) == (per_token, fixed)
    assert round(size / 2**30, 2) == gib
