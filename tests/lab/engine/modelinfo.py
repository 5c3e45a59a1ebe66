"""What the stand-in reads from a model directory: config.json and the weight files.

Multimodal configs nest the language model under `text_config`; missing keys take the
defaults transformers applies for that model type (e.g. Gemma 3's sliding-window
pattern of 6 and 131,072 positions). Layers are counted by kind (full attention, sliding
window, Gated-DeltaNet linear attention); a linear layer's fixed state is kept as the
sizes of its two tensors (a convolution window and a recurrent state).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "fp8": 1, "float8": 1}
# transformers' defaults for keys some vendored configs leave out
TYPE_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma3_text": {"max_position_embeddings": 131072, "sliding_window_pattern": 6},
}


class ModelError(Exception):
    """The model directory cannot be used (missing, no config.json, unreadable)."""


@dataclass(frozen=True)
class ModelShape:
    """The numbers of a model that size its KV cache."""

    architecture: str
    num_layers: int
    full_attention_layers: int
    num_kv_heads: int
    head_dim: int
    max_position_embeddings: int
    dtype: str
    quantization: str | None
    mla_dim: int | None  # kv_lora_rank + qk_rope_head_dim for MLA models
    sliding_layers: int = 0
    sliding_window: int | None = None
    linear: LinearState | None = None  # Gated-DeltaNet layers and their state
    mtp_layers: int = 0  # the model's own draft layers (MTP), if it has any


@dataclass(frozen=True)
class LinearState:
    """Gated-DeltaNet layers: how many, and one layer's state per request (before TP)."""

    layers: int
    conv_channels: int  # 2 x key heads x key dim + value heads x value dim
    conv_rows: int  # conv kernel - 1
    value_heads: int
    head_elements: int  # key dim x value dim
    state_dtype_bytes: int  # the recurrent state's dtype (Qwen3.5: float32)


def text_config(config: dict[str, Any]) -> dict[str, Any]:
    """The language-model part of a (possibly multimodal) config, with type defaults."""
    text = dict(config.get("text_config") or config)
    for key, value in TYPE_DEFAULTS.get(str(text.get("model_type")), {}).items():
        text.setdefault(key, value)
    return text


def layer_kinds(text: dict[str, Any], layers: int) -> list[str]:
    """Each layer's kind: `full_attention`, `sliding_attention` or `linear_attention`."""
    if text.get("layer_types"):
        return [str(kind) for kind in text["layer_types"]]
    if interval := text.get("full_attention_interval"):
        return [
            "full_attention" if (i + 1) % int(interval) == 0 else "linear_attention"
            for i in range(layers)
        ]
    if text.get("sliding_window") and text.get("sliding_window_pattern"):
        pattern = int(text["sliding_window_pattern"])
        return [
            "full_attention" if (i + 1) % pattern == 0 else "sliding_attention"
            for i in range(layers)
        ]
    return ["full_attention"] * layers


def count_full_attention(text: dict[str, Any], layers: int) -> int:
    """Layers with full attention: sliding-window and linear-attention layers excluded."""
    return layer_kinds(text, layers).count("full_attention")


def linear_state(text: dict[str, Any], layers: int) -> LinearState | None:
    """The Gated-DeltaNet layers' state, from the config's `linear_*` keys."""
    count = layer_kinds(text, layers).count("linear_attention")
    if not count:
        return None
    key_heads, value_heads = int(text["linear_num_key_heads"]), int(text["linear_num_value_heads"])
    key_dim, value_dim = int(text["linear_key_head_dim"]), int(text["linear_value_head_dim"])
    family = str(text.get("model_type") or "")
    float32 = text.get("mamba_ssm_dtype", "float32" if family.startswith("qwen3_5") else "")
    return LinearState(
        layers=count,
        conv_channels=2 * key_heads * key_dim + value_heads * value_dim,
        conv_rows=int(text["linear_conv_kernel_dim"]) - 1,
        value_heads=value_heads,
        head_elements=key_dim * value_dim,
        state_dtype_bytes=4 if float32 == "float32" else 2,
    )


def quantization_method(config: dict[str, Any]) -> str | None:
    """vLLM's name for the checkpoint's quantization (old `compression_config` too)."""
    section = config.get("quantization_config") or config.get("compression_config")
    if not section:
        return None
    return str(section.get("quant_method") or "compressed-tensors").replace("_", "-")


def model_dtype(config: dict[str, Any], text: dict[str, Any]) -> str:
    """The checkpoint dtype; float32 checkpoints are served in bfloat16 as vLLM does."""
    dtype = str(
        text.get("torch_dtype") or text.get("dtype") or config.get("torch_dtype") or "bfloat16"
    )
    return "bfloat16" if dtype == "float32" else dtype


def derived_max_len(text: dict[str, Any]) -> int:
    """max_position_embeddings, scaled by a yarn/linear/dynamic rope_scaling factor as
    vLLM's derived max_model_len is (llama3 and longrope scaling leave it alone)."""
    positions = int(text.get("max_position_embeddings") or 2048)
    scaling = text.get("rope_scaling") or {}
    kind = scaling.get("rope_type") or scaling.get("type")
    factor = float(scaling.get("factor") or 1)
    if kind == "yarn":
        return int(int(scaling.get("original_max_position_embeddings") or positions) * factor)
    if kind in ("linear", "dynamic"):
        return int(positions * factor)
    return positions


def read_config(model_dir: Path) -> dict[str, Any]:
    """config.json of a model directory; ModelError when it is not there."""
    path = model_dir / "config.json"
    if not model_dir.is_dir() or not path.is_file():
        raise ModelError(str(model_dir))
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ModelError(f"{path}: {err}") from err


def load_shape(model_dir: Path) -> ModelShape:
    """Read the model's config.json into the numbers the KV arithmetic needs."""
    config = read_config(model_dir)
    text = text_config(config)
    layers = int(text["num_hidden_layers"])
    heads = int(text.get("num_attention_heads") or 1)
    mla = None
    if text.get("kv_lora_rank"):
        mla = int(text["kv_lora_rank"]) + int(text.get("qk_rope_head_dim") or 0)
    kinds = layer_kinds(text, layers)
    mtp = text.get("num_nextn_predict_layers") or text.get("mtp_num_hidden_layers") or 0
    return ModelShape(
        architecture=(config.get("architectures") or ["Unknown"])[0],
        num_layers=layers,
        full_attention_layers=kinds.count("full_attention"),
        num_kv_heads=int(text.get("num_key_value_heads") or heads),
        head_dim=int(text.get("head_dim") or int(text["hidden_size"]) // heads),
        max_position_embeddings=derived_max_len(text),
        dtype=model_dtype(config, text),
        quantization=quantization_method(config),
        mla_dim=mla,
        sliding_layers=kinds.count("sliding_attention"),
        sliding_window=int(text["sliding_window"]) if text.get("sliding_window") else None,
        linear=linear_state(text, layers),
        mtp_layers=int(mtp),
    )


def weight_files(model_dir: Path) -> list[Path]:
    """The checkpoint shards, sorted by name."""
    return sorted(p for p in model_dir.iterdir() if p.suffix in WEIGHT_SUFFIXES and p.is_file())


def weights_bytes(model_dir: Path) -> int:
    """Total size of the checkpoint files (placeholders stand for the real sizes)."""
    return sum(p.stat().st_size for p in weight_files(model_dir))
