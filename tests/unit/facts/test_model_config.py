"""parse_model_config on every recorded config, and the quantization scheme normaliser."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fleet.facts.model_config import (
    AttentionKind,
    ModelFacts,
    QuantizationFacts,
    parse_hf_quant_config,
    parse_model_config,
    parse_quantization_config,
)
from tests.conftest import CORPUS

CONFIGS = CORPUS / "model-configs"

FIELDS = (
    "architecture",
    "model_type",
    "num_layers",
    "hidden_size",
    "num_attention_heads",
    "num_kv_heads",
    "head_dim",
    "num_experts",
    "num_experts_per_token",
    "num_shared_experts",
    "max_position_embeddings",
    "dtype",
    "multimodal",
)
NOTHING = dict.fromkeys(FIELDS) | {"multimodal": False}

# (file, model fields, attention kind, number of full-attention layers listed, quantization)
CASES = [
    (
        "deepseek-v3_mla_moe_fp8-block.config.json",
        {
            "architecture": "DeepseekV3ForCausalLM",
            "model_type": "deepseek_v3",
            "num_layers": 61,
            "hidden_size": 7168,
            "num_attention_heads": 128,
            "num_kv_heads": 128,
            "head_dim": 576,  # kv_lora_rank 512 + qk_rope_head_dim 64, as vLLM counts MLA
            "num_experts": 256,
            "num_experts_per_token": 8,
            "num_shared_experts": 1,
            "max_position_embeddings": 163840,
            "dtype": "bfloat16",
            "multimodal": False,
        },
        AttentionKind.MLA,
        0,
        QuantizationFacts(scheme="fp8-w8a8", method="fp8"),
    ),
    (
        "gemma-3-27b-it_sliding-window_nested-text_config.config.json",
        {
            "architecture": "Gemma3ForConditionalGeneration",
            "model_type": "gemma3",
            "num_layers": 62,
            "hidden_size": 5376,
            "num_attention_heads": 32,
            "num_kv_heads": 16,
            "head_dim": 128,
            "num_experts": None,
            "num_experts_per_token": None,
            "num_shared_experts": None,
            "max_position_embeddings": None,  # not in the sparse text_config
            "dtype": "bfloat16",  # top-level torch_dtype
            "multimodal": True,
        },
        AttentionKind.SLIDING_WINDOW,
        10,  # transformers' Gemma3 default: every 6th layer is full (5, 11, ..., 59)
        QuantizationFacts(),
    ),
    (
        "llama-3.1-8b-instruct_dense.config.json",
        {
            "architecture": "LlamaForCausalLM",
            "model_type": "llama",
            "num_layers": 32,
            "hidden_size": 4096,
            "num_attention_heads": 32,
            "num_kv_heads": 8,
            "head_dim": 128,
            "num_experts": None,
            "num_experts_per_token": None,
            "num_shared_experts": None,
            "max_position_embeddings": 131072,
            "dtype": "bfloat16",
            "multimodal": False,
        },
        AttentionKind.FULL,
        0,
        QuantizationFacts(),
    ),
    (
        "llama-3.2-90b-vision-instruct_mllama_nested-text_config.config.json",
        {
            "architecture": "MllamaForConditionalGeneration",
            "model_type": "mllama",
            "num_layers": 100,
            "hidden_size": 8192,
            "num_attention_heads": 64,
            "num_kv_heads": 8,
            "head_dim": 128,
            "num_experts": None,
            "num_experts_per_token": None,
            "num_shared_experts": None,
            "max_position_embeddings": 131072,
            "dtype": "bfloat16",
            "multimodal": True,
        },
        AttentionKind.FULL,
        0,
        QuantizationFacts(),
    ),
    (
        "llama2.c-stories42m-pruned2.4_compressed-tensors_sparse-24-bitmask.config.json",
        {
            "architecture": "LlamaForCausalLM",
            "model_type": "llama",
            "num_layers": 8,
            "hidden_size": 512,
            "num_attention_heads": 8,
            "num_kv_heads": 8,
            "head_dim": 64,
            "num_experts": None,
            "num_experts_per_token": None,
            "num_shared_experts": None,
            "max_position_embeddings": 1024,
            "dtype": "float32",
            "multimodal": False,
        },
        AttentionKind.FULL,
        0,
        # 2:4 sparsity only, no quantization groups: not one of the quantization schemes.
        QuantizationFacts(scheme="other:sparse-24-bitmask", method="compressed-tensors"),
    ),
    (
        "qwen3-32b_dense.config.json",
        {
            "architecture": "Qwen3ForCausalLM",
            "model_type": "qwen3",
            "num_layers": 64,
            "hidden_size": 5120,
            "num_attention_heads": 64,
            "num_kv_heads": 8,
            "head_dim": 128,
            "num_experts": None,
            "num_experts_per_token": None,
            "num_shared_experts": None,
            "max_position_embeddings": 40960,
            "dtype": "bfloat16",
            "multimodal": False,
        },
        AttentionKind.FULL,  # sliding_window null, use_sliding_window false
        0,
        QuantizationFacts(),
    ),
    (
        "qwen3.5-27b_hybrid-linear-attention_nested-text_config.config.json",
        {
            "architecture": "Qwen3_5ForConditionalGeneration",
            "model_type": "qwen3_5",
            "num_layers": 64,
            "hidden_size": 5120,
            "num_attention_heads": 24,
            "num_kv_heads": 4,
            "head_dim": 256,
            "num_experts": None,
            "num_experts_per_token": None,
            "num_shared_experts": None,
            "max_position_embeddings": 262144,
            "dtype": "bfloat16",
            "multimodal": True,
        },
        AttentionKind.HYBRID_LINEAR,
        16,  # layer_types: every 4th layer full_attention
        QuantizationFacts(),
    ),
    (
        "qwen3.5-9b_hybrid-linear-attention_nested-text_config_vlm.config.json",
        {
            "architecture": "Qwen3_5ForConditionalGeneration",
            "model_type": "qwen3_5",
            "num_layers": 32,
            "hidden_size": 4096,
            "num_attention_heads": 16,
            "num_kv_heads": 4,
            "head_dim": 256,
            "num_experts": None,
            "num_experts_per_token": None,
            "num_shared_experts": None,
            "max_position_embeddings": 262144,
            "dtype": "bfloat16",
            "multimodal": True,
        },
        AttentionKind.HYBRID_LINEAR,
        8,  # layer_types: every 4th layer full_attention
        QuantizationFacts(),
    ),
    (
        "tinyllama-1.1b-chat_compressed-tensors_fp8_kv_cache_scheme-fp8.config.json",
        {
            "architecture": "LlamaForCausalLM",
            "model_type": "llama",
            "num_layers": 22,
            "hidden_size": 2048,
            "num_attention_heads": 32,
            "num_kv_heads": 4,
            "head_dim": 64,
            "num_experts": None,
            "num_experts_per_token": None,
            "num_shared_experts": None,
            "max_position_embeddings": 2048,
            "dtype": "bfloat16",
            "multimodal": False,
        },
        AttentionKind.FULL,
        0,
        # legacy `compression_config` key; fp8 weights and input activations; fp8 KV scheme
        QuantizationFacts(
            scheme="fp8-w8a8",
            method="compressed-tensors",
            format="float-quantized",
            kv_cache_dtype="fp8",
        ),
    ),
    # Not config.json files: they must give empty facts, not invented ones.
    (
        "vllm-tests_base-model-arch-groundtruth_qwen3-next_glm-4.5_deepseek-v3.2_llama4.json",
        NOTHING,
        None,
        0,
        QuantizationFacts(),
    ),
    (
        "vllm-tests_draft-model-arch-groundtruth_eagle-eagle3-medusa-mtp.json",
        NOTHING,
        None,
        0,
        QuantizationFacts(),
    ),
    (
        "llm-compressor-example_int4-pack-quantized_quant-config-fragment.json",
        NOTHING,
        None,
        0,
        QuantizationFacts(),
    ),
    (
        "deepseek-r1-style_modelopt-0.23.0_nvfp4_hf_quant_config.HEAD-EXCERPT.json.txt",
        NOTHING,
        None,
        0,
        QuantizationFacts(),
    ),
]
COVERED = frozenset(case[0] for case in CASES)


@pytest.mark.parametrize(
    ("name", "fields", "kind", "full_layers", "quantization"),
    CASES,
    ids=[case[0] for case in CASES],
)
def test_corpus_config(
    name: str,
    fields: dict[str, object],
    kind: AttentionKind | None,
    full_layers: int,
    quantization: QuantizationFacts,
) -> None:
    facts = parse_model_config((CONFIGS / name).read_text())
    assert {field: getattr(facts, field) for field in FIELDS} == fields
    assert facts.attention.kind == kind
    assert len(facts.attention.full_attention_layers) == full_layers
    assert facts.quantization == quantization


def test_attention_details() -> None:
    deepseek = parse_model_config(
        (CONFIGS / "deepseek-v3_mla_moe_fp8-block.config.json").read_text()
    )
    assert (deepseek.attention.kv_lora_rank, deepseek.attention.qk_rope_head_dim) == (512, 64)
    gemma = parse_model_config(
        (CONFIGS / "gemma-3-27b-it_sliding-window_nested-text_config.config.json").read_text()
    )
    assert (gemma.attention.sliding_window, gemma.attention.sliding_window_pattern) == (1024, 6)
    assert gemma.attention.full_attention_layers[:3] == (5, 11, 17)
    qwen = parse_model_config(
        (CONFIGS / "qwen3.5-27b_hybrid-linear-attention_nested-text_config.config.json").read_text()
    )
    assert qwen.attention.full_attention_layers == tuple(range(3, 64, 4))
    mllama = parse_model_config(
        (
            CONFIGS / "llama-3.2-90b-vision-instruct_mllama_nested-text_config.config.json"
        ).read_text()
    )
    assert mllama.attention.cross_attention_layers == tuple(range(3, 100, 5))


def test_deepseek_agrees_with_vllm_ground_truth() -> None:
    """vLLM's own derived values for DeepSeek-V3.2-Exp, whose geometry V3 shares."""
    truth = json.loads(
        (
            CONFIGS
            / "vllm-tests_base-model-arch-groundtruth_qwen3-next_glm-4.5_deepseek-v3.2_llama4.json"
        ).read_text()
    )["deepseek-ai/DeepSeek-V3.2-Exp"]
    facts = parse_model_config((CONFIGS / "deepseek-v3_mla_moe_fp8-block.config.json").read_text())
    assert facts.hidden_size == truth["hidden_size"]
    assert facts.num_layers == truth["total_num_hidden_layers"]
    assert facts.num_attention_heads == truth["total_num_attention_heads"]
    assert facts.num_kv_heads == truth["total_num_kv_heads"]
    assert facts.head_dim == truth["head_size"]
    assert facts.num_experts == truth["num_experts"]
    assert (facts.attention.kind is AttentionKind.MLA) == truth["is_deepseek_mla"]


def test_quantization_fragment_file() -> None:
    """A bare compressed-tensors config (not a config.json): int4 weights only is W4A16."""
    fragment = json.loads(
        (
            CONFIGS / "llm-compressor-example_int4-pack-quantized_quant-config-fragment.json"
        ).read_text()
    )
    assert parse_quantization_config(fragment) == QuantizationFacts(
        scheme="w4a16", method="compressed_tensors", format="pack-quantized"
    )


def test_modelopt_hf_quant_config_excerpt() -> None:
    """The excerpt completed the way SOURCES.md says the file ends (`]` `}` `}`)."""
    excerpt = (
        CONFIGS / "deepseek-r1-style_modelopt-0.23.0_nvfp4_hf_quant_config.HEAD-EXCERPT.json.txt"
    ).read_text()
    completed = excerpt.rstrip().removesuffix(",") + "\n]\n}\n}\n"
    expected = QuantizationFacts(scheme="nvfp4-w4a4", group_size=16, method="modelopt")
    assert parse_hf_quant_config(completed) == expected
    assert parse_hf_quant_config(excerpt) == QuantizationFacts()
    llama = (CONFIGS / "llama-3.1-8b-instruct_dense.config.json").read_text()
    assert parse_model_config(llama, hf_quant_config=completed).quantization == expected


def group(weights: dict[str, object], inputs: dict[str, object] | None = None) -> dict[str, object]:
    body: dict[str, object] = {"targets": ["Linear"], "weights": weights}
    if inputs is not None:
        body["input_activations"] = inputs
    return {"quant_method": "compressed-tensors", "config_groups": {"group_0": body}}


def scheme(kind: str, bits: int, **extra: object) -> dict[str, object]:
    return {"type": kind, "num_bits": bits, **extra}


# The compressed-tensors presets of FACTS.md §6 and the other quant_methods' config shapes.
SCHEMES = [
    ("ct-w4a16", group(scheme("int", 4, strategy="group", group_size=128)), "w4a16", 128),
    ("ct-w8a16", group(scheme("int", 8, strategy="group", group_size=128)), "w8a16", 128),
    (
        "ct-nvfp4-w4a4",
        group(
            scheme("float", 4, strategy="tensor_group", group_size=16),
            scheme("float", 4, strategy="tensor_group", group_size=16, dynamic="local"),
        ),
        "nvfp4-w4a4",
        16,
    ),
    (
        "ct-nvfp4a16",
        group(scheme("float", 4, strategy="tensor_group", group_size=16)),
        "other:nvfp4-w4a16",
        16,
    ),
    (
        "ct-mxfp4",
        group(scheme("float", 4, strategy="group", group_size=32), scheme("float", 4)),
        "mxfp4",
        32,
    ),
    (
        "ct-fp8-dynamic",
        group(scheme("float", 8, strategy="channel"), scheme("float", 8, strategy="token")),
        "fp8-w8a8",
        None,
    ),
    (
        "ct-fp8-block",
        group(scheme("float", 8, strategy="block"), scheme("float", 8, group_size=128)),
        "fp8-w8a8",
        None,
    ),
    ("ct-int8-w8a8", group(scheme("int", 8), scheme("int", 8)), "other:int8-w8a8", None),
    ("ct-w4afp8", group(scheme("int", 4, group_size=128), scheme("float", 8)), "other:w4afp8", 128),
    ("ct-no-groups", {"quant_method": "compressed-tensors"}, "other:compressed-tensors", None),
    ("fp8", {"quant_method": "fp8", "activation_scheme": "dynamic"}, "fp8-w8a8", None),
    ("mxfp4", {"quant_method": "mxfp4"}, "mxfp4", 32),
    ("awq", {"quant_method": "awq", "bits": 4, "group_size": 128}, "awq-w4a16", 128),
    ("gptq", {"quant_method": "gptq", "bits": 4, "group_size": 128}, "gptq-w4a16", 128),
    ("gptq-8bit", {"quant_method": "gptq", "bits": 8, "group_size": -1}, "w8a16", None),
    ("bnb-4bit", {"quant_method": "bitsandbytes", "load_in_4bit": True}, "bnb-4bit", None),
    ("bnb-8bit", {"quant_method": "bitsandbytes", "load_in_8bit": True}, "other:bnb-8bit", None),
    (
        "modelopt-nvfp4",
        {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16},
        "nvfp4-w4a4",
        16,
    ),
    ("modelopt-fp8", {"quant_method": "modelopt", "quant_algo": "FP8"}, "fp8-w8a8", None),
    ("unknown-method", {"quant_method": "hqq", "group_size": 64}, "other:hqq", 64),
    ("none", {}, "none", None),
]


@pytest.mark.parametrize(
    ("section", "expected", "group_size"),
    [case[1:] for case in SCHEMES],
    ids=[case[0] for case in SCHEMES],
)
def test_quantization_scheme(
    section: dict[str, object], expected: str, group_size: int | None
) -> None:
    facts = parse_quantization_config(section)
    assert (facts.scheme, facts.group_size) == (expected, group_size)


def test_nested_text_config_carries_quantization_at_the_top() -> None:
    config = {
        "architectures": ["X"],
        "text_config": {"num_hidden_layers": 2, "num_attention_heads": 2, "hidden_size": 8},
        "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 32},
    }
    facts = parse_model_config(json.dumps(config))
    assert (facts.quantization.scheme, facts.quantization.group_size) == ("awq-w4a16", 32)


@pytest.mark.parametrize(
    "text",
    ["", "not json", "[]", "null", '{"architectures": 3}', '{"num_hidden_layers": "x"}'],
    ids=["empty", "prose", "list", "null", "odd-architectures", "odd-layers"],
)
def test_odd_text_gives_empty_facts(text: str) -> None:
    facts = parse_model_config(text)
    assert facts.num_layers is None
    assert facts.architecture is None


def test_explain_json_has_exactly_the_documented_keys() -> None:
    assert set(ModelFacts().to_explain_json()) == {
        "architecture",
        "model_type",
        "num_layers",
        "num_kv_heads",
        "head_dim",
        "num_experts",
        "num_experts_per_token",
        "attention",
        "max_position_embeddings",
        "quantization",
        "kv_bytes_per_token",
    }


def test_every_model_config_in_the_corpus_has_a_case() -> None:
    assert {path.name for path in CONFIGS.iterdir()} == COVERED


LAB_FLASH = CORPUS.parent / "lab" / "models" / "Qwen3-30B-A3B-NVFP4.config.json"
# The most context vLLM accepts (_get_and_verify_max_len): (id, config file, max, source).
MAX_LENGTHS = [
    (
        "yarn-over-original",
        CONFIGS / "deepseek-v3_mla_moe_fp8-block.config.json",
        163840,
        "original_max_position_embeddings 4,096 x yarn rope scaling 40",
    ),
    (
        "yarn-raises-the-positions",
        LAB_FLASH,
        131072,
        "original_max_position_embeddings 32,768 x yarn rope scaling 4",
    ),
    (
        "llama3-rope-not-scaled",
        CONFIGS / "llama-3.1-8b-instruct_dense.config.json",
        131072,
        "max_position_embeddings 131,072",
    ),
    (
        "gemma3-default-not-scaled-again",
        CONFIGS / "gemma-3-27b-it_sliding-window_nested-text_config.config.json",
        131072,
        "max_position_embeddings 131,072",
    ),
    (
        "plain",
        CONFIGS / "tinyllama-1.1b-chat_compressed-tensors_fp8_kv_cache_scheme-fp8.config.json",
        2048,
        "max_position_embeddings 2,048",
    ),
    (
        "default-rope-parameters",
        CONFIGS / "qwen3.5-27b_hybrid-linear-attention_nested-text_config.config.json",
        262144,
        "max_position_embeddings 262,144",
    ),
]


@pytest.mark.parametrize(
    ("path", "length", "source"),
    [case[1:] for case in MAX_LENGTHS],
    ids=[case[0] for case in MAX_LENGTHS],
)
def test_max_model_len_as_vllm_derives_it(path: Path, length: int, source: str) -> None:
    facts = parse_model_config(path.read_text())
    assert (facts.max_model_len, facts.max_model_len_source) == (length, source)


SYNTHETIC_LENGTHS = [
    (
        "linear-factor",
        {"max_position_embeddings": 4096, "rope_scaling": {"type": "linear", "factor": 2.0}},
        8192,
    ),
    (
        "dynamic-factor",
        {"max_position_embeddings": 4096, "rope_scaling": {"rope_type": "dynamic", "factor": 4}},
        16384,
    ),
    (
        "longrope-not-scaled",
        {"max_position_embeddings": 131072, "rope_scaling": {"type": "longrope", "factor": 32}},
        131072,
    ),
    ("smallest-key", {"max_position_embeddings": 8192, "seq_length": 4096}, 4096),
    ("model-max-length-wins", {"max_position_embeddings": 8192, "model_max_length": 16384}, 16384),
    (
        "per-layer-type",
        {
            "max_position_embeddings": 4096,
            "rope_parameters": {
                "full_attention": {"rope_type": "linear", "factor": 2.0},
                "sliding_attention": {"rope_type": "default"},
            },
        },
        8192,
    ),
    (
        "odd-factor-ignored",
        {"max_position_embeddings": 4096, "rope_scaling": {"type": "linear", "factor": "x"}},
        4096,
    ),
    ("no-length", {"num_hidden_layers": 2}, None),
]


@pytest.mark.parametrize(
    ("config", "length"),
    [case[1:] for case in SYNTHETIC_LENGTHS],
    ids=[case[0] for case in SYNTHETIC_LENGTHS],
)
def test_max_model_len_rules(config: dict[str, object], length: int | None) -> None:
    assert parse_model_config(json.dumps(config)).max_model_len == length


@pytest.mark.parametrize(
    ("config", "layers"),
    [
        ({"num_nextn_predict_layers": 1}, 1),
        ({"text_config": {"mtp_num_hidden_layers": 2, "num_hidden_layers": 4}}, 2),
        ({"num_nextn_predict_layers": 0}, 0),
        ({"num_hidden_layers": 4}, None),
        ({"num_nextn_predict_layers": True}, None),
    ],
    ids=["deepseek-key", "qwen3.5-key-in-text-config", "zero-is-said", "silent", "odd-value"],
)
def test_mtp_layers(config: dict[str, object], layers: int | None) -> None:
    assert parse_model_config(json.dumps(config)).mtp_layers == layers


def test_gated_deltanet_state_sizes() -> None:
    attention = parse_model_config(
        (CONFIGS / "qwen3.5-27b_hybrid-linear-attention_nested-text_config.config.json").read_text()
    ).attention
    assert (
        attention.linear_key_heads,
        attention.linear_value_heads,
        attention.linear_key_head_dim,
        attention.linear_value_head_dim,
        attention.linear_conv_kernel,
    ) == (16, 48, 128, 128, 4)
