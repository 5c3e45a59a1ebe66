"""A small GGUF reader: the header's key-value pairs and tensor infos, never the weights.

Format (GGUF v2/v3, little-endian): `GGUF`, version u32, tensor count u64, key-value count
u64, the typed key-value pairs, then per tensor its name, dimensions, ggml type and data
offset; tensor data starts at the next multiple of `general.alignment` (32). A tensor's
size is its element count / block size x block bytes of its ggml type. Errors carry the
line llama.cpp's loader prints for the same fault.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

MAGIC = b"GGUF"
# ggml_type -> (name, block size, bytes per block), as ggml's type traits.
GGML_TYPES: dict[int, tuple[str, int, int]] = {
    0: ("f32", 1, 4), 1: ("f16", 1, 2), 2: ("q4_0", 32, 18), 3: ("q4_1", 32, 20),
    6: ("q5_0", 32, 22), 7: ("q5_1", 32, 24), 8: ("q8_0", 32, 34), 9: ("q8_1", 32, 40),
    10: ("q2_K", 256, 84), 11: ("q3_K", 256, 110), 12: ("q4_K", 256, 144),
    13: ("q5_K", 256, 176), 14: ("q6_K", 256, 210), 15: ("q8_K", 256, 292),
    16: ("iq2_xxs", 256, 66), 17: ("iq2_xs", 256, 74), 18: ("iq3_xxs", 256, 98),
    19: ("iq1_s", 256, 50), 20: ("iq4_nl", 32, 18), 21: ("iq3_s", 256, 110),
    22: ("iq2_s", 256, 82), 23: ("iq4_xs", 256, 136), 24: ("i8", 1, 1), 25: ("i16", 1, 2),
    26: ("i32", 1, 4), 27: ("i64", 1, 8), 28: ("f64", 1, 8), 29: ("iq1_m", 256, 56),
    30: ("bf16", 1, 2), 34: ("tq1_0", 256, 54), 35: ("tq2_0", 256, 66), 39: ("mxfp4", 32, 17),
}  # fmt: skip
# gguf value type -> (name as llama.cpp prints it, struct format)
VALUE_TYPES: dict[int, tuple[str, str]] = {
    0: ("u8", "<B"), 1: ("i8", "<b"), 2: ("u16", "<H"), 3: ("i16", "<h"), 4: ("u32", "<I"),
    5: ("i32", "<i"), 6: ("f32", "<f"), 7: ("bool", "<?"), 8: ("str", ""), 9: ("arr", ""),
    10: ("u64", "<Q"), 11: ("i64", "<q"), 12: ("f64", "<d"),
}  # fmt: skip
STRING, ARRAY = 8, 9
KEPT_ITEMS = 16  # an array keeps its first items (for the log) and its length


class GgufError(Exception):
    """The file is no usable GGUF model.

    `message` is what llama.cpp prints; `by_loader` says who prints it: gguf's own reader
    (`gguf_init_from_file_impl: <message>`, then the loader's generic failure) or the model
    loader (`llama_model_load: error loading model: <message>`).
    """

    def __init__(self, message: str, by_loader: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.by_loader = by_loader


@dataclass(frozen=True)
class Value:
    """One key's value: its type name (`str`, `u32`, `arr[str,151936]`) and value."""

    type_name: str
    value: Any
    count: int = 1  # elements of an array


@dataclass(frozen=True)
class Tensor:
    """One tensor info: name, dimensions (ne0 first), ggml type and data offset."""

    name: str
    dims: tuple[int, ...]
    ggml_type: int
    offset: int

    @property
    def elements(self) -> int:
        """Number of elements."""
        n = 1
        for d in self.dims:
            n *= d
        return n

    @property
    def nbytes(self) -> int:
        """Bytes of the tensor's data."""
        _, block, size = GGML_TYPES.get(self.ggml_type, ("?", 1, 4))
        return self.elements // block * size

    @property
    def type_name(self) -> str:
        """ggml's name of the tensor's type."""
        return GGML_TYPES.get(self.ggml_type, (f"type{self.ggml_type}", 1, 1))[0]


@dataclass
class GgufFile:
    """A GGUF file's header."""

    path: Path
    version: int
    kv: dict[str, Value] = field(default_factory=dict)
    tensors: list[Tensor] = field(default_factory=list)
    data_offset: int = 0
    file_size: int = 0

    def get(self, key: str, default: Any = None) -> Any:
        """A key's value."""
        value = self.kv.get(key)
        return default if value is None else value.value

    @property
    def arch(self) -> str:
        """general.architecture."""
        return str(self.get("general.architecture", ""))

    def hparam(self, key: str, default: Any = None) -> Any:
        """`<arch>.<key>`."""
        return self.get(f"{self.arch}.{key}", default)


class _Reader:
    """Little-endian reads from a file, failing as llama.cpp's gguf loader does."""

    def __init__(self, fp: BinaryIO) -> None:
        self.fp = fp

    def take(self, size: int) -> bytes:
        data = self.fp.read(size)
        if len(data) != size:
            raise GgufError("failed to read the file: unexpected end of file")
        return data

    def scalar(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self) -> str:
        return self.take(self.scalar("<Q")).decode("utf-8", errors="replace")

    def value(self, kind: int) -> Value:
        if kind == STRING:
            return Value("str", self.string())
        if kind == ARRAY:
            inner, count = self.scalar("<I"), self.scalar("<Q")
            items = [self.value(inner).value for _ in range(count)]
            inner_name = VALUE_TYPES.get(inner, ("?", ""))[0]
            return Value(f"arr[{inner_name},{count}]", items[:KEPT_ITEMS], count)
        if kind not in VALUE_TYPES:
            raise GgufError(f"invalid value type {kind}")
        name, fmt = VALUE_TYPES[kind]
        return Value(name, self.scalar(fmt))


def read_gguf(path: Path) -> GgufFile:
    """The header of a GGUF file; GgufError with llama.cpp's words when it is none."""
    try:
        fp = path.open("rb")
    except OSError as err:
        raise GgufError(f"failed to open GGUF file '{path}' ({err.strerror})") from err
    with fp:
        reader = _Reader(fp)
        magic = fp.read(4)
        if magic != MAGIC:
            shown = magic.decode("latin-1").ljust(4)
            raise GgufError(f"invalid magic characters: '{shown}', expected 'GGUF'")
        version, n_tensors, n_kv = reader.scalar("<I"), reader.scalar("<Q"), reader.scalar("<Q")
        gguf = GgufFile(path, version)
        for _ in range(n_kv):
            key = reader.string()
            gguf.kv[key] = reader.value(reader.scalar("<I"))
        for _ in range(n_tensors):
            name = reader.string()
            dims = tuple(reader.scalar("<Q") for _ in range(reader.scalar("<I")))
            gguf.tensors.append(Tensor(name, dims, reader.scalar("<I"), reader.scalar("<Q")))
        align = int(gguf.get("general.alignment", 32))
        gguf.data_offset = -(-fp.tell() // align) * align
    gguf.file_size = path.stat().st_size
    check_bounds(gguf)
    return gguf


def check_bounds(gguf: GgufFile) -> None:
    """Every tensor's data lies inside the file (a truncated download does not)."""
    for tensor in gguf.tensors:
        if gguf.data_offset + tensor.offset + tensor.nbytes > gguf.file_size:
            raise GgufError(
                f"tensor '{tensor.name}' data is not within the file bounds, model is "
                "corrupted or incomplete",
                by_loader=True,
            )
