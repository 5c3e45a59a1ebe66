"""Write a tiny random-weight model of one attention family, for the real vLLM to serve.

Run by `tests/lab/real/record_kv.py` (and the live KV contract test) with the vLLM venv's
python, which has `transformers`, `tokenizers` and `torch`:

    python make_tiny_family.py FAMILY OUT_DIR

Each family keeps the KV layout of its real models (layer kinds and their pattern, the
sliding windows, KV heads and head size, MLA's ranks, the Mamba and Gated DeltaNet state
geometry) at a few layers and a small hidden size, so a start costs seconds of CPU. The
config is the family's own transformers class, saved by transformers itself; weights are
random from a fixed seed (the same bytes every run); the tokenizer is the tiny Llama's
(`make_tiny_llama.py`, byte-level BPE, 512 tokens, ChatML).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_tiny_llama import SEED, train_tokenizer

CONTEXT = 4096
COMMON = {"hidden_size": 256, "intermediate_size": 512, "max_position_embeddings": CONTEXT}
ATTENTION = {"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64}

# family -> (transformers config class, its fields). Windows of 512 tokens (128 for
# gpt-oss, as the real one) under a 4,096-token context, so each window bounds its layers.
FAMILIES: dict[str, tuple[str, dict[str, object]]] = {
    "qwen3": ("Qwen3Config", {**ATTENTION, "num_hidden_layers": 4}),
    "deepseek_v2": (
        "DeepseekV2Config",
        {
            "num_hidden_layers": 4,
            "num_attention_heads": 4,
            "num_key_value_heads": 4,
            "kv_lora_rank": 128,
            "q_lora_rank": None,
            "qk_rope_head_dim": 32,
            "qk_nope_head_dim": 64,
            "v_head_dim": 64,
            "first_k_dense_replace": 4,
            "n_routed_experts": 4,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 128,
        },
    ),
    "mistral": ("MistralConfig", {**ATTENTION, "num_hidden_layers": 4, "sliding_window": 512}),
    "gemma3_text": (
        "Gemma3TextConfig",
        {**ATTENTION, "num_hidden_layers": 6, "sliding_window": 512},
    ),
    # vLLM's Gemma 2 ties its embeddings (it loads no lm_head)
    "gemma2": (
        "Gemma2Config",
        {
            **ATTENTION,
            "num_hidden_layers": 4,
            "sliding_window": 512,
            "tie_word_embeddings": True,
        },
    ),
    "gpt_oss": (
        "GptOssConfig",
        {
            **ATTENTION,
            "num_hidden_layers": 4,
            "sliding_window": 128,
            "num_local_experts": 4,
            "num_experts_per_tok": 2,
        },
    ),
    "granitemoehybrid": (
        "GraniteMoeHybridConfig",
        {
            **ATTENTION,
            "num_hidden_layers": 8,
            "layer_types": ["mamba", "mamba", "mamba", "attention"] * 2,
            "mamba_n_heads": 8,
            "mamba_d_head": 64,
            "mamba_d_state": 64,
            "mamba_n_groups": 1,
            "mamba_d_conv": 4,
            "mamba_expand": 2,
            "num_local_experts": 0,
            "shared_intermediate_size": 512,
            "position_embedding_type": "rope",
        },
    ),
    "qwen3_next": (
        "Qwen3NextConfig",
        {
            **ATTENTION,
            "num_hidden_layers": 8,
            "full_attention_interval": 4,
            "linear_num_key_heads": 2,
            "linear_num_value_heads": 4,
            "linear_key_head_dim": 64,
            "linear_value_head_dim": 64,
            "linear_conv_kernel_dim": 4,
            "num_experts": 4,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 128,
            "shared_expert_intermediate_size": 128,
        },
    ),
    "nemotron_h": (
        "NemotronHConfig",
        {
            **ATTENTION,
            "num_hidden_layers": 8,
            "hybrid_override_pattern": "M-M*M-M*",
            "mamba_num_heads": 8,
            "mamba_head_dim": 64,
            "ssm_state_size": 64,
            "n_groups": 1,
            "conv_kernel": 4,
            "expand": 2,
        },
    ),
}


def write_model(family: str, out: Path, vocab_size: int, eos: int, pad: int) -> None:
    """The family's config with the tiny sizes and random weights, saved by transformers."""
    import torch
    import transformers
    from transformers import AutoModelForCausalLM

    class_name, fields = FAMILIES[family]
    torch.manual_seed(SEED)
    tokens = {"bos_token_id": eos, "eos_token_id": eos, "pad_token_id": pad}
    config = getattr(transformers, class_name)(
        **{"tie_word_embeddings": False, **COMMON, **fields, **tokens, "vocab_size": vocab_size}
    )
    config.torch_dtype = torch.bfloat16
    model = AutoModelForCausalLM.from_config(config).to(torch.bfloat16)
    model.save_pretrained(str(out), safe_serialization=True)


def main(argv: list[str]) -> int:
    """Write FAMILY's tiny model into OUT_DIR."""
    family, out = argv[0], Path(argv[1])
    out.mkdir(parents=True, exist_ok=True)
    train_tokenizer(out)
    tokenizer = json.loads((out / "tokenizer.json").read_text())
    added = {token["content"]: token["id"] for token in tokenizer["added_tokens"]}
    size = max([*tokenizer["model"]["vocab"].values(), *added.values()]) + 1
    write_model(family, out, size, added["<|im_end|>"], added["<|endoftext|>"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
