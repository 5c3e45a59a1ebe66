"""GGUF headers of the lab's gemma3 and qwen35moe models, as llama.cpp's converter writes them.

`tests.lab.models.write_gguf` calls `tensor_plan` and `add_metadata` here for these two
architectures (the llama-like qwen3 files are `tests.lab.models`' own). Where each name
comes from, for llama.cpp's gguf-py 0.19.0 (`gguf/constants.py`: `MODEL_TENSORS`,
`TENSOR_NAMES`, `Keys`) and its converter (`convert_hf_to_gguf.py`, `conversion/qwen.py`):

- gemma3 (`Gemma3Model`): the llama keys plus `attention.sliding_window`; no output
  tensor (the embeddings are tied); per block `attn_norm`, `attn_q/k/v`, `attn_q_norm`,
  `attn_k_norm`, `attn_output`, `post_attention_norm`, `ffn_norm` (the pre-FFN norm),
  `ffn_gate/up/down`, `post_ffw_norm`. llama.cpp sets its sliding-window pattern (6)
  itself: the header carries no pattern.
- qwen35moe (`Qwen3_5MoeTextModel`, a Qwen3-Next): the MoE keys (`expert_count`,
  `expert_used_count`, `expert_feed_forward_length`, `expert_shared_feed_forward_length`),
  `rope.dimension_count` (partial rotary) and `rope.dimension_sections` (M-RoPE), the
  linear-attention `ssm.*` keys and `full_attention_interval`. Every `interval`-th layer
  attends fully (`attn_q` twice as wide for its output gate, `attn_k/v`, norms, output);
  the others are Gated DeltaNet layers (`attn_qkv`, `attn_gate`, `ssm_conv1d`, `ssm_dt`,
  `ssm_a`, `ssm_beta`, `ssm_alpha`, `ssm_norm`, `ssm_out`); every layer has the routed
  experts (`ffn_*_exps`), the shared expert (`ffn_*_shexp`) and its gate. A model with
  multi-token prediction (`nextn_predict_layers` N, as llama.cpp b11434's
  `src/models/qwen35moe.cpp` loads it) counts its N MTP blocks in `block_count` and puts
  them last: a full-attention block with the MoE FFN plus `nextn.eh_proj`, `nextn.enorm`
  and `nextn.hnorm`.

The hyper-parameters are the models' config.json values (tests/lab/models/
gguf-architectures.json names each source).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Tensor = tuple[str, tuple[int, ...], str]
Typer = Callable[[str, int], str]  # (kind, layer) -> ggml type name


def _gemma3_block(arch: dict[str, Any], i: int, mat: Typer) -> list[Tensor]:
    e, f, d = arch["embedding_length"], arch["feed_forward_length"], arch["head_dim"]
    q, kv, b = arch["head_count"] * d, arch["head_count_kv"] * d, f"blk.{i}"
    return [
        (f"{b}.attn_norm.weight", (e,), "F32"),
        (f"{b}.attn_q.weight", (q, e), mat("attn_q", i)),
        (f"{b}.attn_k.weight", (kv, e), mat("attn_k", i)),
        (f"{b}.attn_v.weight", (kv, e), mat("attn_v", i)),
        (f"{b}.attn_q_norm.weight", (d,), "F32"),
        (f"{b}.attn_k_norm.weight", (d,), "F32"),
        (f"{b}.attn_output.weight", (e, q), mat("attn_output", i)),
        (f"{b}.post_attention_norm.weight", (e,), "F32"),
        (f"{b}.ffn_norm.weight", (e,), "F32"),
        (f"{b}.ffn_gate.weight", (f, e), mat("ffn_gate", i)),
        (f"{b}.ffn_up.weight", (f, e), mat("ffn_up", i)),
        (f"{b}.ffn_down.weight", (e, f), mat("ffn_down", i)),
        (f"{b}.post_ffw_norm.weight", (e,), "F32"),
    ]


def _qwen35_attention(arch: dict[str, Any], i: int, mat: Typer) -> list[Tensor]:
    e, d, b = arch["embedding_length"], arch["head_dim"], f"blk.{i}"
    q, kv = arch["head_count"] * d, arch["head_count_kv"] * d
    if (i + 1) % arch["full_attention_interval"] == 0:
        return [
            (f"{b}.attn_q.weight", (2 * q, e), mat("attn_q", i)),  # with its output gate
            (f"{b}.attn_k.weight", (kv, e), mat("attn_k", i)),
            (f"{b}.attn_v.weight", (kv, e), mat("attn_v", i)),
            (f"{b}.attn_q_norm.weight", (d,), "F32"),
            (f"{b}.attn_k_norm.weight", (d,), "F32"),
            (f"{b}.attn_output.weight", (e, q), mat("attn_output", i)),
        ]
    inner, heads = arch["ssm_inner_size"], arch["ssm_time_step_rank"]
    conv = inner + 2 * arch["ssm_group_count"] * arch["ssm_state_size"]
    return [
        (f"{b}.attn_qkv.weight", (conv, e), mat("attn_qkv", i)),
        (f"{b}.attn_gate.weight", (inner, e), mat("attn_gate", i)),
        (f"{b}.ssm_conv1d.weight", (conv, arch["ssm_conv_kernel"]), "F32"),
        (f"{b}.ssm_dt.bias", (heads,), "F32"),
        (f"{b}.ssm_a", (heads,), "F32"),
        (f"{b}.ssm_beta.weight", (heads, e), mat("ssm_beta", i)),
        (f"{b}.ssm_alpha.weight", (heads, e), mat("ssm_alpha", i)),
        (f"{b}.ssm_norm.weight", (inner // heads,), "F32"),
        (f"{b}.ssm_out.weight", (e, inner), mat("ssm_out", i)),
    ]


def _qwen35_mtp(arch: dict[str, Any], i: int, mat: Typer) -> list[Tensor]:
    e, d, b = arch["embedding_length"], arch["head_dim"], f"blk.{i}"
    q, kv = arch["head_count"] * d, arch["head_count_kv"] * d
    return [
        (f"{b}.attn_q.weight", (2 * q, e), mat("attn_q", i)),
        (f"{b}.attn_k.weight", (kv, e), mat("attn_k", i)),
        (f"{b}.attn_v.weight", (kv, e), mat("attn_v", i)),
        (f"{b}.attn_q_norm.weight", (d,), "F32"),
        (f"{b}.attn_k_norm.weight", (d,), "F32"),
        (f"{b}.attn_output.weight", (e, q), mat("attn_output", i)),
        (f"{b}.nextn.eh_proj.weight", (e, 2 * e), mat("attn_output", i)),
        (f"{b}.nextn.enorm.weight", (e,), "F32"),
        (f"{b}.nextn.hnorm.weight", (e,), "F32"),
    ]


def _qwen35moe_block(arch: dict[str, Any], i: int, mat: Typer) -> list[Tensor]:
    e, b = arch["embedding_length"], f"blk.{i}"
    n, f, s = arch["expert_count"], arch["expert_feed_forward_length"], arch["shared_ffn"]
    mtp = i >= arch["block_count"] - arch.get("nextn_predict_layers", 0)
    return [
        (f"{b}.attn_norm.weight", (e,), "F32"),
        *(_qwen35_mtp if mtp else _qwen35_attention)(arch, i, mat),
        (f"{b}.post_attention_norm.weight", (e,), "F32"),
        (f"{b}.ffn_gate_inp.weight", (n, e), "F32"),
        (f"{b}.ffn_gate_exps.weight", (n, f, e), mat("ffn_gate", i)),
        (f"{b}.ffn_up_exps.weight", (n, f, e), mat("ffn_up", i)),
        (f"{b}.ffn_down_exps.weight", (n, e, f), mat("ffn_down", i)),
        (f"{b}.ffn_gate_inp_shexp.weight", (e,), "F32"),
        (f"{b}.ffn_gate_shexp.weight", (s, e), mat("ffn_gate", i)),
        (f"{b}.ffn_up_shexp.weight", (s, e), mat("ffn_up", i)),
        (f"{b}.ffn_down_shexp.weight", (e, s), mat("ffn_down", i)),
    ]


BLOCKS = {"gemma3": _gemma3_block, "qwen35moe": _qwen35moe_block}


def tensor_plan(arch: dict[str, Any], mat: Typer) -> list[Tensor]:
    """(name, numpy-order shape, ggml type name) of every tensor of a gemma3 or qwen35moe."""
    e, v, tied = arch["embedding_length"], arch["vocab_size"], arch["tie_word_embeddings"]
    block = BLOCKS[arch["architecture"]]
    out = [("token_embd.weight", (v, e), mat("output" if tied else "embd", 0))]
    for i in range(arch["block_count"]):
        out += block(arch, i, mat)
    out.append(("output_norm.weight", (e,), "F32"))
    if not tied:
        out.append(("output.weight", (v, e), mat("output", 0)))
    return out


def add_metadata(writer: Any, arch: dict[str, Any]) -> None:
    """The keys beyond the llama ones that the converter writes for these architectures."""
    if arch["architecture"] == "gemma3":
        writer.add_sliding_window(arch["sliding_window"])
        return
    writer.add_expert_count(arch["expert_count"])
    writer.add_expert_used_count(arch["expert_used_count"])
    writer.add_expert_feed_forward_length(arch["expert_feed_forward_length"])
    writer.add_expert_shared_feed_forward_length(arch["shared_ffn"])
    writer.add_rope_dimension_count(arch["rope_dimension_count"])
    writer.add_rope_dimension_sections(arch["rope_dimension_sections"])
    writer.add_ssm_conv_kernel(arch["ssm_conv_kernel"])
    writer.add_ssm_state_size(arch["ssm_state_size"])
    writer.add_ssm_group_count(arch["ssm_group_count"])
    writer.add_ssm_time_step_rank(arch["ssm_time_step_rank"])
    writer.add_ssm_inner_size(arch["ssm_inner_size"])
    writer.add_full_attention_interval(arch["full_attention_interval"])
    if arch.get("nextn_predict_layers"):
        writer.add_uint32("qwen35moe.nextn_predict_layers", arch["nextn_predict_layers"])
