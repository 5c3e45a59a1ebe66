"""What a GGUF header says of a model's layers, as llama.cpp b11434 reads it: its trunk
and its multi-token-prediction blocks, which layers cache K and V (all, a hybrid's every
`full_attention_interval`-th, an iswa model's full and sliding ones), and a Gated
DeltaNet hybrid's recurrent state. Called by `layout`.
"""

from __future__ import annotations

from .gguf import GgufFile

SWA_PATTERN = {"gemma3": 6, "gemma2": 2, "cohere2": 4, "gpt-oss": 2}  # llama-model.cpp


def nextn_layers(gguf: GgufFile) -> int:
    """The model's multi-token-prediction blocks (0: none)."""
    return int(gguf.hparam("nextn_predict_layers", 0) or 0)


def trunk_layers(gguf: GgufFile) -> int:
    """llama.cpp's n_layer: block_count without the MTP blocks."""
    return int(gguf.hparam("block_count")) - nextn_layers(gguf)


def cached_layers(gguf: GgufFile, n_layer: int) -> tuple[list[int], list[int]]:
    """(full-attention layers, sliding-window layers) that hold a KV cache."""
    interval = int(gguf.hparam("full_attention_interval", 1) or 1)
    attending = [i for i in range(n_layer) if (i + 1) % interval == 0]
    pattern = SWA_PATTERN.get(gguf.arch, 0)
    if not pattern or not gguf.hparam("attention.sliding_window"):
        return attending, []
    swa = [i for i in attending if i % pattern < pattern - 1]
    return [i for i in attending if i not in swa], swa


def recurrent_state(
    gguf: GgufFile, n_layer: int, attending: int, rows: int
) -> tuple[int, int, int] | None:
    """A Gated DeltaNet hybrid's recurrent state (llama-memory-recurrent.cpp), f32, in each
    of its linear layers and `rows` = sequences x (1 + rollback snapshots): R, the
    convolution's last (d_conv - 1) inputs of d_inner + 2 x groups x d_state channels; S,
    d_state x d_state per value head (ssm.time_step_rank)."""
    if not gguf.hparam("full_attention_interval") or not gguf.hparam("ssm.state_size"):
        return None
    d_state, groups = int(gguf.hparam("ssm.state_size")), int(gguf.hparam("ssm.group_count"))
    channels = int(gguf.hparam("ssm.inner_size")) + 2 * groups * d_state
    r = (int(gguf.hparam("ssm.conv_kernel")) - 1) * channels * 4
    s = d_state * d_state * int(gguf.hparam("ssm.time_step_rank")) * 4
    linear = n_layer - attending
    return n_layer, linear * rows * r, linear * rows * s
