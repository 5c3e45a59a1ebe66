"""What a llama-server will hold, said from its GGUF header before it starts.

Called by `fleet.plan.predict` for a llama.cpp seat: the buffers llama-server b11434 logs
at start-up (`-lv 4`), each sized as its source sizes it, on the seat's GPU (all layers
offloaded, as fleet renders `--n-gpu-layers 999`) or, for a CPU seat, in the host's RAM:

- weights (`load_tensors: ... model buffer size`): every tensor's data by its ggml type
  where the header's tensor infos are read (`GgufFacts.tensor_bytes`), else the file's
  size; on a GPU without `token_embd`, which llama.cpp keeps in host memory;
- KV (`llama_kv_cache: ... KV buffer size`): per slot (one stream each, `kv_unified`
  false) `n_ctx_seq` cells in every full-attention layer, n_ctx_seq the seat's context
  padded to 256 (src/llama-context.cpp); a sliding-window layer holds `GGML_PAD(min(
  n_ctx_seq, n_swa + n_ubatch), 256)` cells (src/llama-kv-cache-iswa.cpp); a linear-
  attention layer its recurrent state (`ModelInfo.kv_fixed_bytes`); K and V each at their
  `--cache-type-k` / `--cache-type-v` (ggml's bytes per element of the type);
- compute (`sched_reserve: ... compute buffer size`): the graph `sched_reserve` (src/
  llama-context.cpp) reserves for `n_tokens = min(n_ctx, n_ubatch)` with one output per
  slot, as ggml's allocator lays it out: the attention mask stays for the whole graph
  (`build_attn_inp_kq_mask`, src/llama-graph.cpp: n_kv x n_tokens, f16 with flash
  attention, f32 without; an iswa model has a second one over its sliding-window cache,
  `self_kq_mask_swa`), beside the larger of two phases: the FFN's (f32 gate, up and
  their product, `3 n_ff`, with the residual stream and its norms, `5 n_embd`, per token;
  a MoE model's n_ff the routed experts', `expert_used_count x expert_feed_forward_length`)
  and, without flash attention, the attention's (every head's f32 scores, n_kv x n_tokens,
  with `8 n_embd` per token). The logits come after the FFN's buffers are freed and add
  nothing. The per-token factors are fitted to b11434's CPU logs: within 1% for widths
  128 to 512 at n_ubatch 128 and 512, contexts 2,048 to 8,192, 1 to 4 slots, with and
  without flash attention (the lab's tiny llama, tests/corpus/llamacpp-buffers), and on
  the tiny gemma3 (iswa) and qwen35moe (Gated DeltaNet hybrid with experts) of
  tests/corpus/llamacpp-logs; a 64-wide model's is 17% below what this rule says;
- output (`llama_context: ... output buffer size`): `slots x n_vocab` f32 logits, in host
  memory (CUDA_Host on a GPU seat).
Pure. None where the header lacks what a part needs.
"""

from __future__ import annotations

from collections.abc import Sequence

from fleet.base import CoreModel
from fleet.facts.gguf import GgufFacts
from fleet.spec.models import Seat

MIB = 1024**2
PAD = 256  # llama.cpp pads n_ctx, n_ctx_seq and the SWA cache to 256 cells
UBATCH, BATCH = 512, 2048  # llama-server's defaults
# ggml's bytes per element of the cache types llama-server takes (`--cache-type-k/v`)
CACHE_TYPE_BYTES = {
    "f32": 4.0, "f16": 2.0, "bf16": 2.0, "q8_0": 34 / 32, "q4_0": 18 / 32, "q4_1": 20 / 32,
    "iq4_nl": 18 / 32, "q5_0": 22 / 32, "q5_1": 24 / 32,
}  # fmt: skip
CUDA_CONTEXT_MIB = 300  # what a CUDA process holds beside its buffers (not logged)


class LlamaMemory(CoreModel):
    """The buffers a llama-server logs at start-up, predicted; bytes."""

    where: str
    weights: int
    kv: int
    compute: int
    output: int
    gpu: bool

    @property
    def device_bytes(self) -> int:
        """What the seat's device holds (a GPU: without the host-side output buffer)."""
        return self.weights + self.kv + self.compute + (0 if self.gpu else self.output)

    def footprint_mib(self) -> int:
        """What plan counts on the device: the buffers, and a GPU's CUDA context."""
        return -(-self.device_bytes // MIB) + (CUDA_CONTEXT_MIB if self.gpu else 0)

    def describe(self) -> str:
        """`GPU 0: weights 4.1GiB + KV 1.0GiB + compute 312MiB = 5.4GiB ..., estimate`."""
        parts = [("weights", self.weights), ("KV", self.kv), ("compute", self.compute)]
        if not self.gpu:
            parts.append(("output", self.output))
        said = " + ".join(f"{name} {_size(size)}" for name, size in parts)
        context = f" (+ CUDA context ~{CUDA_CONTEXT_MIB}MiB)" if self.gpu else ""
        return (
            f"{self.where}: {said} = {_size(self.device_bytes)}{context}, "
            "estimate from the GGUF header"
        )


def flag_value(args: Sequence[str], names: tuple[str, ...]) -> str | None:
    """The last value given to one of `names` (`-ub 256`, `--ubatch-size=256`)."""
    found = None
    for i, token in enumerate(args):
        name, eq, inline = token.partition("=")
        if name in names:
            found = inline if eq else (args[i + 1] if i + 1 < len(args) else None)
    return found


def predict_memory(
    header: GgufFacts, size_bytes: int | None, seat: Seat, where: str
) -> LlamaMemory | None:
    """The seat's buffers from its model's header; None where the header is too thin."""
    slots = seat.parallel or 1
    weights = header.tensor_bytes or size_bytes
    if weights is None or not header.vocab_size or not header.embedding_length:
        return None
    gpu = bool(seat.gpus)
    if gpu:
        weights -= header.input_tensor_bytes or 0
    kv = kv_bytes(header, seat)
    if kv is None:
        return None
    return LlamaMemory(
        where=where,
        weights=weights,
        kv=kv,
        compute=compute_bytes(header, seat),
        output=slots * header.vocab_size * 4,
        gpu=gpu,
    )


def kv_bytes(header: GgufFacts, seat: Seat) -> int | None:
    """Every slot's KV cache at its cache types."""
    args, slots = seat.extra_args, seat.parallel or 1
    per_layer = _layer_cell_bytes(header, args)
    layers, n = header.context_layers, header.block_count
    if per_layer is None or layers is None or n is None:
        return None
    n_ctx_seq = _pad(seat.context)
    cells = layers * n_ctx_seq
    if header.sliding_window and not header.full_attention_interval and n > layers:
        window = header.sliding_window + _ubatch(args, seat.context * slots)
        cells += (n - layers) * _pad(min(n_ctx_seq, window))
        fixed = 0
    else:
        fixed = header.kv_fixed_bytes
    return slots * (int(cells * per_layer) + fixed)


def compute_bytes(header: GgufFacts, seat: Seat) -> int:
    """The reserved graph's largest parts (this module's docstring says which)."""
    args, slots = seat.extra_args, seat.parallel or 1
    n_tokens = min(_pad(seat.context * slots), _ubatch(args, seat.context * slots))
    n_kv = _pad(seat.context)
    n_kv += _swa_cells(header, seat)  # an iswa model's second mask
    flash = (flag_value(args, ("-fa", "--flash-attn")) or "auto") not in ("off", "0", "false")
    mask = n_kv * n_tokens * (2 if flash else 4)
    embd = header.embedding_length or 0
    ffn = n_tokens * (3 * _ffn_width(header) + 5 * embd) * 4
    scores = n_kv * n_tokens * (header.head_count or 1) * 4
    attention = 0 if flash else scores + n_tokens * 8 * embd * 4
    return mask + max(ffn, attention)


def _swa_cells(header: GgufFacts, seat: Seat) -> int:
    """The cells of an iswa model's sliding-window cache per stream (0: none)."""
    layers, n = header.context_layers, header.block_count
    if not header.sliding_window or header.full_attention_interval or not n or layers in (None, n):
        return 0
    window = header.sliding_window + _ubatch(seat.extra_args, seat.context * (seat.parallel or 1))
    return _pad(min(_pad(seat.context), window))


def _ffn_width(header: GgufFacts) -> int:
    """The FFN's width per token: the dense one, else the experts a token is routed to."""
    embd = header.embedding_length or 0
    if header.feed_forward_length:
        return header.feed_forward_length
    if header.expert_feed_forward_length and header.expert_used_count:
        return header.expert_feed_forward_length * header.expert_used_count
    return 4 * embd


def _layer_cell_bytes(header: GgufFacts, args: Sequence[str]) -> float | None:
    """One layer's K and V for one cell, at the seat's cache types."""
    f16 = header.layer_token_bytes  # KV heads x (key + value length) x 2
    if f16 is None or not header.head_count:
        return None
    heads = header.head_count_kv or header.head_count
    fallback = (header.embedding_length or 0) // header.head_count
    key, value = header.key_length or fallback, header.value_length or fallback
    k_type = (flag_value(args, ("-ctk", "--cache-type-k")) or "f16").lower()
    v_type = (flag_value(args, ("-ctv", "--cache-type-v")) or "f16").lower()
    if k_type not in CACHE_TYPE_BYTES or v_type not in CACHE_TYPE_BYTES:
        return None
    return heads * (key * CACHE_TYPE_BYTES[k_type] + value * CACHE_TYPE_BYTES[v_type])


def _ubatch(args: Sequence[str], n_ctx: int) -> int:
    """n_ubatch: `-ub`, at most `-b` (llama.cpp caps it there)."""
    ubatch = _int(flag_value(args, ("-ub", "--ubatch-size")), UBATCH)
    return min(ubatch, _int(flag_value(args, ("-b", "--batch-size")), BATCH))


def _int(text: str | None, default: int) -> int:
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default


def _pad(cells: int) -> int:
    return -(-cells // PAD) * PAD


def _size(size: int) -> str:
    return f"{size / 1024**3:.1f}GiB" if size >= 1024**3 else f"{size / MIB:,.1f}MiB"
