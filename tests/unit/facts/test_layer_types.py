"""Every spelling of a hybrid's layer kinds in config.json, read as the same layout.

Families list their layers differently, and transformers 5 re-saves some of them in its
own words: Granite-4.0-H's `layer_types` of `mamba`/`attention` become
`linear_attention`/`full_attention` (as Qwen3-Next spells its Gated DeltaNet), Nemotron-H's
`hybrid_override_pattern` becomes `layers_block_type`. One case per spelling: which layers
attend fully, which keep a state, and of what kind.
"""

from __future__ import annotations

import json

import pytest

from fleet.facts.attention import AttentionKind
from fleet.facts.kv_estimate import kv_layout
from fleet.facts.kv_state import StateKind
from fleet.facts.model_config import parse_model_config
from tests.conftest import CORPUS

MAMBA2 = {
    "hidden_size": 256,
    "num_key_value_heads": 2,
    "head_dim": 64,
    "num_attention_heads": 4,
}
GRANITE = {
    **MAMBA2,
    "model_type": "granitemoehybrid",
    "num_hidden_layers": 4,
    "mamba_n_heads": 8,
    "mamba_d_head": 64,
    "mamba_d_state": 64,
    "mamba_d_conv": 4,
    "mamba_n_groups": 1,
}
NEMOTRON_H = {
    **MAMBA2,
    "model_type": "nemotron_h",
    "num_hidden_layers": 4,
    "mamba_num_heads": 8,
    "mamba_head_dim": 64,
    "ssm_state_size": 64,
    "conv_kernel": 4,
    "n_groups": 1,
}
GDN = {
    **MAMBA2,
    "model_type": "qwen3_next",
    "num_hidden_layers": 4,
    "linear_num_key_heads": 2,
    "linear_num_value_heads": 4,
    "linear_key_head_dim": 64,
    "linear_value_head_dim": 64,
    "linear_conv_kernel_dim": 4,
}
MAMBA_T5 = ["linear_attention", "linear_attention", "linear_attention", "full_attention"]

# (id, config, full-attention layers, state layers, state kind)
SPELLINGS = [
    (
        "granite-4.0-h-mamba-attention",
        {**GRANITE, "layer_types": ["mamba", "mamba", "mamba", "attention"]},
        (3,),
        (0, 1, 2),
        StateKind.MAMBA2,
    ),
    (
        "granite-4.0-h-transformers-5",
        {**GRANITE, "layer_types": MAMBA_T5},
        (3,),
        (0, 1, 2),
        StateKind.MAMBA2,
    ),
    (
        "qwen3-next-linear-attention-is-gated-deltanet",
        {**GDN, "layer_types": MAMBA_T5},
        (3,),
        (0, 1, 2),
        StateKind.GATED_DELTA_NET,
    ),
    (
        "nemotron-h-hybrid-override-pattern",
        {**NEMOTRON_H, "hybrid_override_pattern": "M-M*"},
        (3,),
        (0, 2),
        StateKind.MAMBA2,
    ),
    (
        "nemotron-h-transformers-5-layers-block-type",
        {
            **NEMOTRON_H,
            "layers_block_type": ["linear_attention", "mlp", "linear_attention", "full_attention"],
        },
        (3,),
        (0, 2),
        StateKind.MAMBA2,
    ),
    (
        "jamba-attn-layer-period-offset",
        {
            **MAMBA2,
            "model_type": "jamba",
            "num_hidden_layers": 8,
            "attn_layer_period": 8,
            "attn_layer_offset": 4,
            "mamba_d_state": 16,
            "mamba_d_conv": 4,
            "mamba_expand": 2,
        },
        (4,),
        (0, 1, 2, 3, 5, 6, 7),
        StateKind.MAMBA1,
    ),
    (
        "bamba-attn-layer-indices",
        {**NEMOTRON_H, "model_type": "bamba", "attn_layer_indices": [1]},
        (1,),
        (0, 2, 3),
        StateKind.MAMBA2,
    ),
    (
        "falcon-h1-mamba-beside-attention-in-every-layer",
        {
            **MAMBA2,
            "model_type": "falcon_h1",
            "num_hidden_layers": 2,
            "mamba_d_ssm": 512,
            "mamba_n_heads": 8,
            "mamba_d_head": 64,
            "mamba_d_state": 64,
            "mamba_d_conv": 4,
            "mamba_n_groups": 1,
        },
        (0, 1),
        (0, 1),
        StateKind.MAMBA2,
    ),
]


@pytest.mark.parametrize(
    ("config", "full", "state", "kind"),
    [case[1:] for case in SPELLINGS],
    ids=[case[0] for case in SPELLINGS],
)
def test_each_spelling_of_the_layer_kinds(
    config: dict[str, object], full: tuple[int, ...], state: tuple[int, ...], kind: StateKind
) -> None:
    attention = parse_model_config(json.dumps(config)).attention
    expected = AttentionKind.HYBRID_LINEAR if kind is StateKind.GATED_DELTA_NET else None
    assert attention.kind is (expected or AttentionKind.HYBRID_MAMBA)
    assert (attention.full_attention_layers, attention.state_layers) == (full, state)
    assert attention.state is not None and attention.state.kind is kind


def test_a_layer_count_left_out_is_the_length_of_the_layer_list() -> None:
    """Nemotron-H as transformers 5 saves it states no `num_hidden_layers`."""
    blocks = ["linear_attention", "mlp", "linear_attention", "full_attention"]
    config = {k: v for k, v in NEMOTRON_H.items() if k != "num_hidden_layers"}
    facts = parse_model_config(json.dumps({**config, "layers_block_type": blocks}))
    assert facts.num_layers == 4
    assert kv_layout(facts) is not None


def test_granite_and_its_transformers_5_resave_give_one_estimate() -> None:
    """The recorded tiny Granite-4.0-H config (saved by transformers 5.19) and the same
    config in the spelling Granite publishes give the same layout and figures."""
    resaved = json.loads((CORPUS / "vllm-cpu-kv" / "granitemoehybrid.config.json").read_text())
    published = dict(resaved)
    published["layer_types"] = [
        {"linear_attention": "mamba", "full_attention": "attention"}[kind]
        for kind in resaved["layer_types"]
    ]
    layouts = [kv_layout(parse_model_config(json.dumps(c))) for c in (published, resaved)]
    assert layouts[0] is not None and layouts[0] == layouts[1]
    assert layouts[0].tokens(256 * 1024**2) > 0
