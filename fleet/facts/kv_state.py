"""The fixed per-request state of a linear-attention or Mamba layer, read off config.json.

Called by `fleet.facts.attention` (which layers hold such a state) and by the KV-cache
layout (`fleet.facts.kv_estimate.kv_layout`), which sizes one cache page to hold it. A
state is two tensors per layer and request, as vLLM's `MambaStateShapeCalculator` shapes
them: a convolution window (`conv_kernel - 1` rows, plus one per speculative token) and a
recurrent state. Under tensor parallelism both split across GPUs. The convolution window
is kept in the model dtype; the recurrent state in `ssm_dtype` (`mamba_ssm_dtype` in the
config; Qwen3.5 and Qwen3-Next keep it in float32, transformers' default for them).
Pure.
"""

from __future__ import annotations

from enum import StrEnum

from fleet.base import CoreModel
from fleet.facts._text import first_int, first_str

MODEL_BYTES = 2  # vLLM runs the model, and so the convolution window, at 16 bits
_FLOAT32_SSM_FAMILIES = ("qwen3_5", "qwen3_next")
_DTYPE_BYTES = {"float32": 4, "fp32": 4, "float": 4, "bfloat16": 2, "float16": 2, "half": 2}


class StateKind(StrEnum):
    """Which layer keeps the state (and so how its tensors are shaped)."""

    GATED_DELTA_NET = "gated-deltanet"  # Qwen3-Next, Qwen3.5 linear attention
    MAMBA2 = "mamba2"  # Nemotron-H, Granite-4.0-H, Bamba
    MAMBA1 = "mamba1"  # Jamba


class StateShape(CoreModel):
    """What one state layer keeps per request.

    Gated DeltaNet: `channels` = 2 * key heads * key dim + value heads * value dim;
    `heads` value heads of `head_dim` x `state_dim` (key dim x value dim).
    Mamba2: `channels` = intermediate + 2 * groups * state size (groups widened to the
    TP size when they do not divide it); `heads` of `head_dim` x `state_dim`.
    Mamba1: `channels` = intermediate; the recurrent state is `channels` x `state_dim`.
    """

    kind: StateKind
    channels: int
    conv_kernel: int
    heads: int
    head_dim: int
    state_dim: int
    groups: int = 0
    group_state: int = 0
    ssm_dtype: str = "auto"

    def page_bytes(self, tensor_parallel_size: int = 1, spec_tokens: int = 0) -> int:
        """Bytes of one layer's state for one request on one GPU."""
        tp = max(tensor_parallel_size, 1)
        channels = self.channels
        if self.kind is StateKind.MAMBA2 and self.groups % tp:
            channels += 2 * (tp - self.groups) * self.group_state  # vLLM replicates groups
        conv = (self.conv_kernel - 1 + spec_tokens) * (channels // tp) * MODEL_BYTES
        if self.kind is StateKind.MAMBA1:
            recurrent = self.channels // tp * self.state_dim
        else:
            recurrent = self.heads // tp * self.head_dim * self.state_dim
        return conv + recurrent * _DTYPE_BYTES.get(self.ssm_dtype, MODEL_BYTES)


def gated_delta_net(config: dict[str, object]) -> StateShape | None:
    """The Gated-DeltaNet state (`linear_*` keys); None when the config lacks one."""
    keys = ("linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim")
    dims = [first_int(config, key) for key in (*keys, "linear_value_head_dim")]
    kernel = first_int(config, "linear_conv_kernel_dim")
    if kernel is None or None in dims:
        return None
    key_heads, value_heads, key_dim, value_dim = (d or 0 for d in dims)
    return StateShape(
        kind=StateKind.GATED_DELTA_NET,
        channels=2 * key_heads * key_dim + value_heads * value_dim,
        conv_kernel=kernel,
        heads=value_heads,
        head_dim=key_dim,
        state_dim=value_dim,
        ssm_dtype=_ssm_dtype(config),
    )


def mamba(config: dict[str, object]) -> StateShape | None:
    """A Mamba2 state (heads given) or a Mamba1 one; None when the config lacks one."""
    state = first_int(config, "ssm_state_size", "mamba_d_state", "state_size")
    kernel = first_int(config, "conv_kernel", "mamba_d_conv", "conv_kernel_size")
    heads = first_int(config, "mamba_num_heads", "mamba_n_heads")
    head_dim = first_int(config, "mamba_head_dim", "mamba_d_head")
    hidden = first_int(config, "hidden_size")
    expand = first_int(config, "mamba_expand", "expand")
    intermediate = first_int(config, "mamba_intermediate_size", "mamba_d_ssm") or (
        heads * head_dim if heads and head_dim else (expand * hidden if expand and hidden else None)
    )
    if state is None or kernel is None or intermediate is None:
        return None
    if heads and head_dim:
        groups = first_int(config, "n_groups", "mamba_n_groups") or 1
        return StateShape(
            kind=StateKind.MAMBA2,
            channels=intermediate + 2 * groups * state,
            conv_kernel=kernel,
            heads=heads,
            head_dim=head_dim,
            state_dim=state,
            groups=groups,
            group_state=state,
            ssm_dtype=_ssm_dtype(config),
        )
    return StateShape(
        kind=StateKind.MAMBA1,
        channels=intermediate,
        conv_kernel=kernel,
        heads=0,
        head_dim=0,
        state_dim=state,
        ssm_dtype=_ssm_dtype(config),
    )


def _ssm_dtype(config: dict[str, object]) -> str:
    """The recurrent state's dtype: the config's, else the family's default, else auto."""
    stated = first_str(config, "mamba_ssm_dtype", "mamba_ssm_cache_dtype")
    if stated:
        return stated.lower().removeprefix("torch.")
    family = str(config.get("model_type") or "")
    return "float32" if family.startswith(_FLOAT32_SSM_FAMILIES) else "auto"
