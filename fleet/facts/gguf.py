"""Facts from a GGUF model file's header: architecture, layers, context, heads, file type.

Called by observation on the first bytes of each `*.gguf` model the host has (the fact
script sends only the head of the file, base64-encoded; never the whole file). The
format is GGUF v2/v3: `GGUF`, version, tensor and key-value counts, then typed key-value
pairs (`general.architecture`, `<arch>.block_count`, `<arch>.context_length`,
`<arch>.attention.head_count[_kv]`, `general.file_type`, ...). Reading stops cleanly
where the bytes end, so a header cut short still gives the keys before the cut (the
tokenizer's long arrays come last). Total: any bytes give a `GgufFacts`.

Not every layer keeps a KV entry per token of the context, as llama.cpp lays its cache
out (src/llama-model.cpp, src/models/qwen35*.cpp, src/llama-memory-recurrent.cpp):
- a hybrid with linear attention (qwen35, qwen35moe, qwen3next) attends fully in every
  `<arch>.full_attention_interval`-th layer (`(il + 1) % interval == 0`); the others keep
  a fixed recurrent state per sequence, f32: `(ssm.conv_kernel - 1) * (ssm.inner_size + 2
  * ssm.group_count * ssm.state_size)` + `ssm.state_size * ssm.inner_size` values;
- a sliding-window model (gemma3: `attention.sliding_window`, the pattern llama.cpp sets
  as 6, or `attention.sliding_window_pattern` where the header has one) attends fully in
  every 6th layer (`il % 6 == 5`); the others hold at most the window per sequence.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from typing import Any

from pydantic import Field

from fleet.base import CoreModel

MAGIC = b"GGUF"
# llama.cpp's `llama_ftype` (general.file_type): the quantization a file was made with.
FILE_TYPES = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1",
    10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M",
    16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S",
    22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M",
    28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0", 37: "TQ2_0",
    38: "MXFP4_MOE", 39: "NVFP4", 40: "Q1_0",
}  # fmt: skip
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?",
            10: "<Q", 11: "<q", 12: "<d"}  # fmt: skip
STRING, ARRAY = 8, 9
MAX_ARRAY_KEPT = 64  # longer arrays (the tokenizer's) are skipped, not kept
# llama.cpp's `set_swa_pattern(n)` for architectures whose header has no pattern key
SWA_PATTERNS = {"gemma3": 6}
STATE_BYTES = 4  # llama.cpp keeps the recurrent state in f32
# ggml's types (ggml/src/ggml.c `type_traits`, as gguf-py's GGML_QUANT_SIZES):
# (elements per block, bytes per block)
GGML_TYPES = {
    0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34),
    9: (32, 40), 10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176),
    14: (256, 210), 15: (256, 292), 16: (256, 66), 17: (256, 74), 18: (256, 98),
    19: (256, 50), 20: (32, 18), 21: (256, 110), 22: (256, 82), 23: (256, 136), 24: (1, 1),
    25: (1, 2), 26: (1, 4), 27: (1, 8), 28: (1, 8), 29: (256, 56), 30: (1, 2),
    34: (256, 54), 35: (256, 66), 39: (32, 17), 40: (64, 36), 41: (128, 18),
}  # fmt: skip
INPUT_TENSORS = ("token_embd.weight",)  # kept in host memory whatever -ngl says


class GgufFacts(CoreModel):
    """What a GGUF header says; a key it does not reach or hold is None."""

    version: int | None = None
    tensor_count: int | None = None
    architecture: str | None = None
    name: str | None = None
    block_count: int | None = None
    context_length: int | None = None
    embedding_length: int | None = None
    head_count: int | None = None
    head_count_kv: int | None = None
    key_length: int | None = None
    value_length: int | None = None
    expert_count: int | None = None
    expert_used_count: int | None = None
    expert_feed_forward_length: int | None = None
    file_type: str | None = None
    sliding_window: int | None = None
    sliding_window_pattern: int | None = None
    full_attention_interval: int | None = None
    ssm_conv_kernel: int | None = None
    ssm_inner_size: int | None = None
    ssm_state_size: int | None = None
    ssm_group_count: int | None = None
    feed_forward_length: int | None = None
    vocab_size: int | None = Field(
        None, description="tokenizer.ggml.tokens' length, else token_embd's rows"
    )
    tensor_bytes: int | None = Field(
        None, description="every tensor's data by its type, where the head reaches them all"
    )
    input_tensor_bytes: int | None = Field(None, description="token_embd's share of those")
    complete: bool = False

    @property
    def context_layers(self) -> int | None:
        """The layers whose KV cache grows with the context: those that attend fully."""
        n = self.block_count
        if not n:
            return None
        if self.full_attention_interval:  # a linear-attention hybrid
            return sum(1 for il in range(n) if (il + 1) % self.full_attention_interval == 0)
        pattern = self.sliding_window_pattern or SWA_PATTERNS.get(self.architecture or "")
        if self.sliding_window and pattern:
            return sum(1 for il in range(n) if il % pattern == pattern - 1)
        return n

    @property
    def layer_token_bytes(self) -> int | None:
        """An f16 KV cache's bytes per token in one attention layer: KV heads x (key +
        value length) x 2. The head sizes are the header's `attention.key_length` /
        `value_length` where it has them (qwen3: 128 though embedding / heads is 64), else
        embedding / heads."""
        if not self.head_count:
            return None
        fallback = self.embedding_length // self.head_count if self.embedding_length else None
        key, value = self.key_length or fallback, self.value_length or fallback
        if not key or not value:
            return None
        return (self.head_count_kv or self.head_count) * (key + value) * 2

    @property
    def kv_bytes_per_token(self) -> int | None:
        """An f16 KV cache's bytes per token of the context: the full-attention layers'."""
        layers, per_layer = self.context_layers, self.layer_token_bytes
        return layers * per_layer if layers is not None and per_layer is not None else None

    @property
    def kv_fixed_bytes(self) -> int:
        """What each sequence holds beside that, whatever its context: sliding-window
        layers at their whole window (f16), linear-attention layers' recurrent state."""
        n, layers = self.block_count or 0, self.context_layers
        others = n - layers if layers is not None else 0
        if not others:
            return 0
        if self.full_attention_interval:
            conv, inner = self.ssm_conv_kernel or 0, self.ssm_inner_size or 0
            state, groups = self.ssm_state_size or 0, self.ssm_group_count or 0
            values = max(conv - 1, 0) * (inner + 2 * groups * state) + state * inner
            return others * values * STATE_BYTES
        return others * (self.layer_token_bytes or 0) * (self.sliding_window or 0)


class _Cut(Exception):
    """The bytes ended before the value did."""


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, size: int) -> bytes:
        if size < 0 or self.at + size > len(self.data):
            raise _Cut
        chunk = self.data[self.at : self.at + size]
        self.at += size
        return chunk

    def scalar(self, kind: int) -> Any:
        fmt = _SCALARS[kind]
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def array_length(self) -> int:
        """The length of the array that starts here (its item type, then its count)."""
        at = self.at
        self.take(4)
        count = int(self.scalar(10))
        self.at = at
        return count

    def string(self) -> str:
        return self.take(self.scalar(10)).decode("utf-8", errors="replace")

    def value(self, kind: int) -> Any:
        if kind == STRING:
            return self.string()
        if kind == ARRAY:
            inner, count = self.scalar(4), self.scalar(10)
            items = [self.value(inner) for _ in range(count)]
            return items if count <= MAX_ARRAY_KEPT else None
        if kind not in _SCALARS:
            raise _Cut
        return self.scalar(kind)


def parse_gguf_header(data: bytes) -> GgufFacts:
    """The facts of a GGUF header's bytes; anything that is not one gives empty facts."""
    reader = _Reader(data)
    found: dict[str, Any] = {}
    try:
        if reader.take(4) != MAGIC:
            return GgufFacts()
        found["version"], found["tensor_count"] = reader.scalar(4), reader.scalar(10)
        count = reader.scalar(10)
        for _ in range(count):
            key = reader.string()
            kind = reader.scalar(4)
            if kind == ARRAY and key == "tokenizer.ggml.tokens":
                found["vocab_size"] = reader.array_length()
            found[key] = reader.value(kind)
        found["complete"] = True
        found.update(_tensor_bytes(reader, found["tensor_count"]))
    except (_Cut, struct.error, KeyError, RecursionError, OverflowError, MemoryError):
        pass
    return _facts(found)


def _tensor_bytes(reader: _Reader, count: int) -> dict[str, int]:
    """The tensors' data sizes by their types (name, dims, type, offset per tensor), and
    the vocabulary token_embd's rows are; empty when the head ends before the last
    tensor's info or names a type not in GGML_TYPES."""
    total = inputs = vocab = 0
    for _ in range(count):
        name = reader.string()
        dims = [reader.scalar(10) for _ in range(reader.scalar(4))]
        kind = reader.scalar(4)
        reader.scalar(10)
        if kind not in GGML_TYPES:
            return {}
        per_block, block_bytes = GGML_TYPES[kind]
        size = -(-math.prod(dims) // per_block) * block_bytes
        total += size
        if name in INPUT_TENSORS:
            inputs += size
            vocab = dims[-1] if len(dims) == 2 else vocab
    found = {"tensor_bytes": total, "input_tensor_bytes": inputs}
    return found | ({"embedded_vocab": vocab} if vocab else {})


def parse_gguf_base64(text: str) -> GgufFacts:
    """The facts of a header sent base64-encoded (as the fact script sends it)."""
    try:
        return parse_gguf_header(base64.b64decode("".join(text.split()), validate=False))
    except (binascii.Error, ValueError):
        return GgufFacts()


def _facts(found: dict[str, Any]) -> GgufFacts:
    arch = found.get("general.architecture")
    arch = arch if isinstance(arch, str) else None

    def number(key: str) -> int | None:
        value = found.get(f"{arch}.{key}") if arch else None
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    file_type = found.get("general.file_type")
    name = found.get("general.name")
    return GgufFacts(
        version=found.get("version"),
        tensor_count=found.get("tensor_count"),
        architecture=arch,
        name=name if isinstance(name, str) else None,
        block_count=number("block_count"),
        context_length=number("context_length"),
        embedding_length=number("embedding_length"),
        head_count=number("attention.head_count"),
        head_count_kv=number("attention.head_count_kv"),
        key_length=number("attention.key_length"),
        value_length=number("attention.value_length"),
        expert_count=number("expert_count"),
        expert_used_count=number("expert_used_count"),
        expert_feed_forward_length=number("expert_feed_forward_length"),
        sliding_window=number("attention.sliding_window"),
        sliding_window_pattern=number("attention.sliding_window_pattern"),
        full_attention_interval=number("full_attention_interval"),
        ssm_conv_kernel=number("ssm.conv_kernel"),
        ssm_inner_size=number("ssm.inner_size"),
        ssm_state_size=number("ssm.state_size"),
        ssm_group_count=number("ssm.group_count"),
        feed_forward_length=number("feed_forward_length"),
        vocab_size=found.get("vocab_size") or number("vocab_size") or found.get("embedded_vocab"),
        tensor_bytes=found.get("tensor_bytes"),
        input_tensor_bytes=found.get("input_tensor_bytes"),
        file_type=FILE_TYPES.get(file_type) if isinstance(file_type, int) else None,
        complete=bool(found.get("complete")),
    )
