"""How a model's layers attend, read off its config.json: full attention, MLA, a sliding
window (on every layer or on all but every N-th), hybrid linear attention (Gated DeltaNet)
or a Mamba hybrid (Mamba layers beside a few attention layers).

Called by `fleet.facts.model_config` on the language model's section of a config. What
the KV-cache estimate (`fleet.facts.kv_estimate`) needs of each layout is kept: which
layers attend over the whole context, which keep a fixed state (and its shape,
`fleet.facts.kv_state`), the window, MLA's latent rank. Pure.
"""

from __future__ import annotations

from enum import StrEnum

from fleet.base import CoreModel
from fleet.facts._text import first_int
from fleet.facts.kv_state import StateShape, gated_delta_net, mamba

# transformers' default "one full-attention layer every N" when a config gives no pattern.
_DEFAULT_SLIDING_PATTERN = {"gemma2": 2, "gemma3": 6, "gemma3_text": 6, "cohere2": 4}
# A Mamba hybrid's layer names, as `_mamba_kinds` reads them.
_MAMBA_NAMES = {
    "mamba": "M",
    "linear_attention": "M",
    "attention": "*",
    "full_attention": "*",
}


class AttentionKind(StrEnum):
    """How a model's layers attend, which decides what its KV cache holds per token."""

    FULL = "full"
    SLIDING_WINDOW = "sliding-window"
    MLA = "mla"
    HYBRID_LINEAR = "hybrid-linear"
    HYBRID_MAMBA = "hybrid-mamba"


class AttentionFacts(CoreModel):
    """The attention layout: its kind and what the KV-cache estimate needs to know.

    `full_attention_layers` lists the layers (0-based) that attend over the whole context
    when only some do (sliding-window patterns, hybrid linear attention); it is empty when
    all layers do. `cross_attention_layers` attend to image tokens, not to the context.
    `state_layers` keep a fixed state per request instead of a KV cache (`state` its
    shape); a hybrid's other layers (an MLP-only layer of Nemotron-H) keep nothing.
    """

    kind: AttentionKind | None = None
    sliding_window: int | None = None
    sliding_window_pattern: int | None = None
    full_attention_layers: tuple[int, ...] = ()
    cross_attention_layers: tuple[int, ...] = ()
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    linear_key_heads: int | None = None
    linear_value_heads: int | None = None
    linear_key_head_dim: int | None = None
    linear_value_head_dim: int | None = None
    linear_conv_kernel: int | None = None
    state_layers: tuple[int, ...] = ()
    state: StateShape | None = None


def attention_facts(config: dict[str, object]) -> AttentionFacts:
    """Classify the attention layout of a (language model's) config from the fields each
    family uses."""
    layers = first_int(config, "num_hidden_layers", "n_layer", "num_layers", "n_layers")
    cross = _layer_indices(config.get("cross_attention_layers"))
    if (rank := first_int(config, "kv_lora_rank")) is not None:
        return AttentionFacts(
            kind=AttentionKind.MLA,
            kv_lora_rank=rank,
            qk_rope_head_dim=first_int(config, "qk_rope_head_dim"),
        )
    window = first_int(config, "sliding_window")
    # Before `layer_types`: a Mamba hybrid may list its layers there too (Granite-4.0-H).
    if (mamba_hybrid := _mamba_hybrid(config, layers)) is not None:
        return mamba_hybrid
    layer_types = config.get("layer_types")
    if isinstance(layer_types, list) and layer_types:
        return _from_layer_types(config, layer_types, window)
    if (interval := first_int(config, "full_attention_interval")) and layers:
        return _linear(config, tuple(i for i in range(layers) if (i + 1) % interval == 0))
    if window and config.get("use_sliding_window") is not False and layers:
        return _sliding(config, window, layers)
    kind = AttentionKind.FULL if layers else None
    return AttentionFacts(kind=kind, cross_attention_layers=cross)


def _linear(
    config: dict[str, object], full: tuple[int, ...], linear: tuple[int, ...] | None = None
) -> AttentionFacts:
    """Hybrid linear attention; the Gated-DeltaNet state sizes where the config gives them."""
    layers = first_int(config, "num_hidden_layers") or 0
    return AttentionFacts(
        kind=AttentionKind.HYBRID_LINEAR,
        full_attention_layers=full,
        state_layers=linear if linear is not None else _others(layers, full),
        state=gated_delta_net(config),
        linear_key_heads=first_int(config, "linear_num_key_heads"),
        linear_value_heads=first_int(config, "linear_num_value_heads"),
        linear_key_head_dim=first_int(config, "linear_key_head_dim"),
        linear_value_head_dim=first_int(config, "linear_value_head_dim"),
        linear_conv_kernel=first_int(config, "linear_conv_kernel_dim"),
    )


def _from_layer_types(
    config: dict[str, object], layer_types: list[object], window: int | None
) -> AttentionFacts:
    """`layer_types` names each layer: full, sliding or linear attention."""
    full = tuple(i for i, kind in enumerate(layer_types) if kind == "full_attention")
    linear = tuple(i for i, k in enumerate(layer_types) if isinstance(k, str) and "linear" in k)
    if linear:
        return _linear(config, full, linear)
    if "sliding_attention" in layer_types:
        return AttentionFacts(
            kind=AttentionKind.SLIDING_WINDOW,
            sliding_window=window,
            sliding_window_pattern=_period(full),
            full_attention_layers=full,
        )
    return AttentionFacts(kind=AttentionKind.FULL)


def _mamba_hybrid(config: dict[str, object], layers: int | None) -> AttentionFacts | None:
    """Mamba layers beside attention layers, however the family lists them (`_mamba_kinds`);
    None when the config is no Mamba hybrid."""
    kinds = _mamba_kinds(config, layers)
    if not any(kind in "MB" for kind in kinds):
        return None
    return AttentionFacts(
        kind=AttentionKind.HYBRID_MAMBA,
        full_attention_layers=tuple(i for i, k in enumerate(kinds) if k in "*B"),
        state_layers=tuple(i for i, k in enumerate(kinds) if k in "MB"),
        state=mamba(config),
    )


def _mamba_kinds(config: dict[str, object], layers: int | None) -> list[str]:
    """Each layer's kind: `M` Mamba, `*` attention, `B` both side by side, `-` neither.

    The spellings: `layer_types` of `mamba`/`attention` (Granite-4.0-H as published) or,
    in a config transformers 5 re-saved, `linear_attention`/`full_attention` on a config
    with a Mamba state and no Gated-DeltaNet one (Qwen3-Next spells its Gated DeltaNet so);
    `hybrid_override_pattern` (`M` Mamba, `*` attention, `-` MLP, Nemotron-H) or its
    transformers-5 `layers_block_type` (`linear_attention`/`full_attention`/`mlp`);
    `attn_layer_indices` (Bamba); `attn_layer_period` and `attn_layer_offset` (Jamba);
    Falcon-H1 runs a Mamba mixer beside attention in every layer."""
    layer_types, pattern = config.get("layer_types"), config.get("hybrid_override_pattern")
    blocks = config.get("layers_block_type")
    is_mamba = mamba(config) is not None and gated_delta_net(config) is None
    if isinstance(layer_types, list) and ("mamba" in layer_types or is_mamba):
        return [_MAMBA_NAMES.get(str(k), "-") for k in layer_types]
    if isinstance(pattern, str) and "M" in pattern:
        return list(pattern)
    if isinstance(blocks, list) and is_mamba:
        return [_MAMBA_NAMES.get(str(k), "-") for k in blocks]
    if layers and isinstance(indices := config.get("attn_layer_indices"), list):
        return ["*" if i in indices else "M" for i in range(layers)]
    if layers and (period := first_int(config, "attn_layer_period")):
        offset = first_int(config, "attn_layer_offset") or 0
        return ["*" if i % period == offset else "M" for i in range(layers)]
    if layers and str(config.get("model_type")) == "falcon_h1" and is_mamba:
        return ["B"] * layers
    return []


def _others(layers: int, full: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(i for i in range(layers) if i not in full)


def _sliding(config: dict[str, object], window: int, layers: int) -> AttentionFacts:
    """A sliding window on every layer, or on all but every N-th (the family's default N)."""
    pattern = first_int(config, "sliding_window_pattern")
    if pattern is None:
        pattern = _DEFAULT_SLIDING_PATTERN.get(str(config.get("model_type")))
    full = tuple(i for i in range(layers) if pattern and (i + 1) % pattern == 0)
    return AttentionFacts(
        kind=AttentionKind.SLIDING_WINDOW,
        sliding_window=window,
        sliding_window_pattern=pattern,
        full_attention_layers=full,
    )


def _period(full: tuple[int, ...]) -> int | None:
    """N when the full layers are exactly every N-th layer (N-1, 2N-1, ...)."""
    if not full:
        return None
    step = full[0] + 1
    return step if all(index == step * (n + 1) - 1 for n, index in enumerate(full)) else None


def _layer_indices(value: object) -> tuple[int, ...]:
    """A list of layer numbers, ignoring anything that is not an int."""
    if not isinstance(value, list):
        return ()
    return tuple(item for item in value if isinstance(item, int) and not isinstance(item, bool))
