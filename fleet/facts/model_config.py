"""Facts from a model's `config.json`: architecture, size, experts, attention, quantization.

Called by the reconciler on the config.json it reads from a host's model directory, by
`fleet explain model`, by the KV-cache estimator (`fleet.facts.kv_estimate`) and by the
planner's predictions. Multimodal configs nest the language model under `text_config` (or
`llm_config`, `language_config`). `max_model_len` is the most context vLLM accepts for the
model (`_get_and_verify_max_len`: the smallest length key, scaled by rope scaling except
llama3/longrope and Gemma 3); `mtp_layers` counts the model's own draft (MTP) layers.
The attention layout is read by `fleet.facts.attention` and the quantization normaliser
lives in `fleet.facts.quantization`; their public names are re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping

from fleet.base import CoreModel
from fleet.facts._text import first_int, first_str, json_object
from fleet.facts.attention import AttentionFacts, AttentionKind, attention_facts
from fleet.facts.kv_estimate import estimate_kv_bytes_per_token
from fleet.facts.quantization import (
    NO_QUANTIZATION,
    QuantizationFacts,
    parse_hf_quant_config,
    parse_quantization_config,
)

__all__ = [
    "NO_QUANTIZATION",
    "AttentionFacts",
    "AttentionKind",
    "ModelFacts",
    "QuantizationFacts",
    "estimate_kv_bytes_per_token",
    "parse_hf_quant_config",
    "parse_model_config",
    "parse_quantization_config",
]

_TEXT_CONFIG_KEYS = ("text_config", "llm_config", "language_config")
# transformers' default positions where a family's config.json may leave the key out.
_DEFAULT_POSITIONS = {"gemma3_text": 131072}
# The keys vLLM reads a model's length from (the smallest wins; model_max_length overrides).
_LENGTH_KEYS: tuple[str, ...] = (
    "max_position_embeddings",
    "n_positions",
    "max_seq_len",
    "seq_length",
)
_LENGTH_KEYS += ("model_max_length", "max_target_positions", "max_sequence_length")
_LENGTH_KEYS += ("max_seq_length", "seq_len")
_MTP_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_modules")


class ModelFacts(CoreModel):
    """What a config.json says about the language model; an absent fact is None."""

    architectures: tuple[str, ...] = ()
    model_type: str | None = None
    text_model_type: str | None = None
    num_layers: int | None = None
    hidden_size: int | None = None
    num_attention_heads: int | None = None
    num_kv_heads: int | None = None
    head_dim: int | None = None
    num_experts: int | None = None
    num_experts_per_token: int | None = None
    num_shared_experts: int | None = None
    attention: AttentionFacts = AttentionFacts()
    max_position_embeddings: int | None = None
    max_model_len: int | None = None
    max_model_len_source: str | None = None
    mtp_layers: int | None = None
    dtype: str | None = None
    quantization: QuantizationFacts = QuantizationFacts()
    multimodal: bool = False

    @property
    def architecture(self) -> str | None:
        """The first (normally the only) architecture class name."""
        return self.architectures[0] if self.architectures else None

    def to_explain_json(self, kv_dtype: str = "auto") -> dict[str, object]:
        """The JSON `fleet explain model --json` prints, with exactly its documented keys."""
        return {
            "architecture": self.architecture,
            "model_type": self.model_type,
            "num_layers": self.num_layers,
            "num_kv_heads": self.num_kv_heads,
            "head_dim": self.head_dim,
            "num_experts": self.num_experts,
            "num_experts_per_token": self.num_experts_per_token,
            "attention": self.attention.kind.value if self.attention.kind else None,
            "max_position_embeddings": self.max_position_embeddings,
            "quantization": {
                "scheme": self.quantization.scheme,
                "group_size": self.quantization.group_size,
            },
            "kv_bytes_per_token": estimate_kv_bytes_per_token(self, kv_dtype),
        }


def _num_layers(config: dict[str, object]) -> int | None:
    """The layer count, else the length of a per-layer list (Nemotron-H as transformers 5
    saves it states only `layers_block_type`)."""
    stated = first_int(config, "num_hidden_layers", "n_layer", "num_layers", "n_layers")
    if stated is not None:
        return stated
    for key in ("layers_block_type", "hybrid_override_pattern", "layer_types"):
        if isinstance(listed := config.get(key), list | str) and listed:
            return len(listed)
    return None


def parse_model_config(text: str, hf_quant_config: str | None = None) -> ModelFacts:
    """Read model facts off config.json text; `hf_quant_config` is ModelOpt's sibling file.

    Text that is not a JSON object gives empty facts.
    """
    config = json_object(text)
    if not config:
        return ModelFacts()
    inner = _text_config(config)
    quantization = parse_quantization_config(_quant_section(config, inner))
    if hf_quant_config is not None and quantization.scheme == NO_QUANTIZATION:
        quantization = parse_hf_quant_config(hf_quant_config)
    heads = first_int(inner, "num_attention_heads", "n_head", "num_heads")
    hidden = first_int(inner, "hidden_size", "n_embd", "d_model")
    attention = attention_facts(inner)
    max_len, max_len_source = _max_model_len(inner)
    return ModelFacts(
        architectures=_strings(config.get("architectures")),
        model_type=first_str(config, "model_type"),
        text_model_type=first_str(inner, "model_type") if inner is not config else None,
        num_layers=_num_layers(inner),
        hidden_size=hidden,
        num_attention_heads=heads,
        num_kv_heads=first_int(inner, "num_key_value_heads", "num_kv_heads", "n_head_kv") or heads,
        head_dim=_head_dim(inner, attention, hidden, heads),
        num_experts=first_int(
            inner, "n_routed_experts", "num_experts", "num_local_experts", "moe_num_experts"
        ),
        num_experts_per_token=first_int(
            inner, "num_experts_per_tok", "num_experts_per_token", "experts_per_token", "moe_k"
        ),
        num_shared_experts=first_int(inner, "n_shared_experts", "num_shared_experts"),
        attention=attention,
        max_position_embeddings=first_int(inner, "max_position_embeddings", "n_positions"),
        max_model_len=max_len,
        max_model_len_source=max_len_source,
        mtp_layers=next((n for c in (inner, config) if (n := _count(c)) is not None), None),
        dtype=first_str(inner, "dtype", "torch_dtype") or first_str(config, "dtype", "torch_dtype"),
        quantization=quantization,
        multimodal=inner is not config or "vision_config" in config,
    )


def _text_config(config: dict[str, object]) -> dict[str, object]:
    """The language model's section of a multimodal config, else the config itself."""
    for key in _TEXT_CONFIG_KEYS:
        nested = config.get(key)
        if isinstance(nested, dict) and nested:
            return nested
    return config


def _quant_section(config: dict[str, object], inner: dict[str, object]) -> Mapping[str, object]:
    """`quantization_config` (or the legacy `compression_config`) wherever it sits."""
    for section in (config, inner):
        for key in ("quantization_config", "compression_config"):
            value = section.get(key)
            if isinstance(value, dict):
                return value
    return {}


def _head_dim(
    config: dict[str, object], attention: AttentionFacts, hidden: int | None, heads: int | None
) -> int | None:
    """The cached size per head; for MLA the latent plus its RoPE part, as vLLM counts it."""
    if attention.kind is AttentionKind.MLA and attention.kv_lora_rank is not None:
        return attention.kv_lora_rank + (attention.qk_rope_head_dim or 0)
    return first_int(config, "head_dim") or (hidden // heads if hidden and heads else None)


def _max_model_len(config: dict[str, object]) -> tuple[int | None, str | None]:
    """The most context vLLM accepts, and how it got there (None: config.json does not say)."""
    model_type = str(config.get("model_type") or "")
    lengths = {key: n for key in _LENGTH_KEYS if (n := first_int(config, key)) is not None}
    if "model_max_length" in lengths:
        key = "model_max_length"
    elif lengths:
        key = min(lengths, key=lambda k: lengths[k])
    elif model_type in _DEFAULT_POSITIONS:
        lengths = {"max_position_embeddings": _DEFAULT_POSITIONS[model_type]}
        key = "max_position_embeddings"
    else:
        return None, None
    source = f"{key} {lengths[key]:,}"
    if "gemma3" in model_type:  # vLLM: Gemma 3's positions are already scaled
        return lengths[key], source
    base, factor, kind = _rope_scaling(config, lengths[key])
    if factor == 1.0 and base == lengths[key]:
        return base, source
    if kind == "yarn":
        source = f"original_max_position_embeddings {base:,}"
    return int(base * factor), f"{source} x {kind} rope scaling {factor:g}"


def _rope_scaling(config: dict[str, object], length: int) -> tuple[int, float, str]:
    """(base length, factor, rope type) as vLLM applies `rope_scaling`/`rope_parameters`."""
    section = config.get("rope_parameters") or config.get("rope_scaling")
    if not isinstance(section, dict):
        return length, 1.0, ""
    parts = [v for v in section.values() if isinstance(v, dict)]
    if not parts or len(parts) != len(section):  # one section, or one per layer type
        parts = [section]
    base, factor, kind = length, 1.0, ""
    for part in parts:
        kind = str(part.get("rope_type") or part.get("type") or "default")
        if kind in ("su", "longrope", "llama3"):
            continue
        value = part.get("factor")
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            factor = float(value)
        original = first_int(part, "original_max_position_embeddings")
        if kind == "yarn" and original is not None:
            base = original
    return base, factor, kind


def _count(config: dict[str, object]) -> int | None:
    """The number of MTP (draft) layers the config states, 0 included; None if silent."""
    for key in _MTP_KEYS:
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None


def _strings(value: object) -> tuple[str, ...]:
    """A list of strings as a tuple, ignoring anything else."""
    if not isinstance(value, list):
        return ()
    return tuple(item for item in value if isinstance(item, str))
