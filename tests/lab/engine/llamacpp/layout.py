"""Where llama.cpp puts a model's bytes: model, KV, compute and output buffers per device.

- Context: n_ctx = --ctx-size (0: the model's context_length) padded to 256; with
  --parallel S slots and no --kv-unified each slot (stream) gets n_ctx_seq = n_ctx / S
  (padded to 256), so the cache holds n_ctx cells in S streams of n_ctx_seq.
- Layers: -ngl N offloads the last min(N, n_layer) repeating layers, and the output
  layer when N > n_layer; offloaded layers are split over the visible GPUs in proportion
  to their free memory. token_embd stays on the CPU (mmapped: `CPU_Mapped`); a model with
  tied embeddings copies it to the output layer's GPU.
- KV bytes per layer = n_ctx cells x KV heads x head dim x type bytes, for K and for V
  (head dim = <arch>.attention.key_length / value_length, else embedding / heads); a
  layer's cache lives with the layer unless --no-kv-offload. Hybrid models cache only
  every <arch>.full_attention_interval-th layer. A model with interleaved sliding-window
  attention (<arch>.attention.sliding_window and llama.cpp's pattern for its arch, e.g.
  gemma3: 5 sliding, 1 full) gets two caches, as src/llama-kv-cache-iswa.cpp: its full
  layers n_ctx_seq cells per stream, its sliding layers
  GGML_PAD(min(n_ctx_seq, n_swa x (streams sharing a cache) + n_ubatch), 256).
  A model's multi-token-prediction blocks (<arch>.nextn_predict_layers, counted in
  block_count, last) are no layers of the target's: its cache and offload leave them out,
  and `--spec-type draft-mtp` gives them a context of their own (`plan_mtp_layout`), a
  full-attention cache of n_ctx_seq cells per stream over those blocks, as b11434's
  common_speculative_init_result and the recorded tiny-qwen35moe-mtp log.
- Compute buffer (an approximation): logits n_vocab x n_ubatch x 4 bytes plus
  activations 4 x n_embd x n_ubatch x 4 bytes on the first device that computes;
  output buffer n_vocab x 4 x slots on the host. Each GPU used also holds CUDA_CONTEXT
  bytes (the corpus log's memory breakdown leaves 164 MiB unaccounted for).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..gpu import Gpu
from .args import ServerArgs
from .gguf import GgufFile
from .hparams import cached_layers, nextn_layers, recurrent_state, trunk_layers

MiB = 1 << 20
CUDA_CONTEXT = 164 * MiB
CTX_PAD = 256
KV_TYPE_BYTES = {  # (block size, bytes per block)
    "f32": (1, 4), "f16": (1, 2), "bf16": (1, 2), "q8_0": (32, 34), "q4_0": (32, 18),
    "q4_1": (32, 20), "iq4_nl": (32, 18), "q5_0": (32, 22), "q5_1": (32, 24),
}  # fmt: skip


@dataclass(frozen=True)
class Device:
    """A GPU the process may use and the bytes free on it now."""

    position: int  # CUDA<n>
    gpu: Gpu
    free: int

    @property
    def name(self) -> str:
        """ggml's buffer name: CUDA0, CUDA1, ..."""
        return f"CUDA{self.position}"


@dataclass
class KvCache:
    """One KV cache: the full-attention one, or an iswa model's sliding-window one."""

    swa: bool
    cells: int  # per stream
    layers: int
    k_bytes: int = 0
    v_bytes: int = 0
    by_device: dict[str, int] = field(default_factory=dict)


@dataclass
class Layout:
    """One model's buffers (target or draft)."""

    n_layer: int
    offloaded_repeating: int
    output_offloaded: bool
    n_ctx: int
    n_ctx_seq: int
    n_seq: int
    n_stream: int
    kv_layers: int
    type_k: str
    type_v: str
    k_bytes: int = 0
    v_bytes: int = 0
    model: dict[str, int] = field(default_factory=dict)
    kv: dict[str, int] = field(default_factory=dict)
    compute: dict[str, int] = field(default_factory=dict)
    output: tuple[str, int] = ("CPU", 0)
    gpus: dict[str, Device] = field(default_factory=dict)
    caches: list[KvCache] = field(default_factory=list)
    rs_seq: int = 0  # rollback snapshots per sequence (b11434: the MTP draft's n_max)
    recurrent: tuple[int, int, int] | None = None  # (layers, R bytes, S bytes), a hybrid's

    @property
    def offloaded(self) -> int:
        """Layers on GPUs, the output layer counted."""
        return self.offloaded_repeating + int(self.output_offloaded)

    def gpu_bytes(self, name: str) -> int:
        """What this model holds on one GPU (buffers and the CUDA context)."""
        held = self.model.get(name, 0) + self.kv.get(name, 0) + self.compute.get(name, 0)
        return held + CUDA_CONTEXT if held else 0


def pad(n: int, to: int = CTX_PAD) -> int:
    """GGML_PAD."""
    return -(-n // to) * to


def context_sizes(args: ServerArgs, n_ctx_train: int, n_seq: int) -> tuple[int, int, int]:
    """(n_ctx, n_ctx_seq, n_stream), as llama_context derives them."""
    n_ctx = pad(args.ctx_size or n_ctx_train)
    if args.kv_unified or n_seq == 1:
        return n_ctx, n_ctx, 1
    n_ctx_seq = pad(n_ctx // n_seq)
    return n_ctx_seq * n_seq, n_ctx_seq, n_seq


def layer_of(name: str, n_layer: int) -> int | None:
    """The layer a tensor belongs to: blk.N -> N, output -> n_layer, token_embd -> None."""
    if name.startswith("blk."):
        return int(name.split(".")[1])
    if name.startswith("output"):
        return n_layer
    return None


def split_layers(first: int, count: int, devices: list[Device]) -> dict[int, Device]:
    """Layers first..first+count-1 over the devices, in proportion to their free memory."""
    total = sum(max(d.free, 1) for d in devices)
    bounds, acc = [], 0.0
    for device in devices:
        acc += max(device.free, 1) / total
        bounds.append(acc)
    out: dict[int, Device] = {}
    for j in range(count):
        at = next((i for i, b in enumerate(bounds) if j / count < b), len(devices) - 1)
        out[first + j] = devices[at]
    return out


def kv_row_bytes(gguf: GgufFile, kind: str, type_name: str, layer: int) -> int:
    """One cached token's K (or V) bytes in one layer."""
    heads = int(gguf.hparam("attention.head_count", 1))
    kv_heads = gguf.hparam("attention.head_count_kv", heads)
    kv_heads = kv_heads[layer] if isinstance(kv_heads, list) else kv_heads
    key = "attention.key_length" if kind == "k" else "attention.value_length"
    head_dim = int(gguf.hparam(key) or int(gguf.hparam("embedding_length")) // heads)
    block, size = KV_TYPE_BYTES[type_name]
    return int(kv_heads) * head_dim // block * size


def plan_layout(
    gguf: GgufFile,
    args: ServerArgs,
    n_gpu_layers: int,
    devices: list[Device],
    n_seq: int,
    rs_seq: int = 0,
) -> Layout:
    """Size every buffer of one model on the given GPUs (none: all on the CPU)."""
    n_layer = trunk_layers(gguf)
    ngl = n_layer + 1 if n_gpu_layers < 0 else n_gpu_layers
    ngl = ngl if devices else 0
    n_ctx, n_ctx_seq, n_stream = context_sizes(args, int(gguf.hparam("context_length")), n_seq)
    kv_layers, swa_layers = cached_layers(gguf, n_layer)
    lay = Layout(
        n_layer,
        min(ngl, n_layer),
        ngl > n_layer,
        n_ctx,
        n_ctx_seq,
        n_seq,
        n_stream,
        len(kv_layers) + len(swa_layers),
        args.cache_type_k,
        args.cache_type_v,
    )
    first = n_layer - lay.offloaded_repeating
    placed = split_layers(first, lay.offloaded, devices) if lay.offloaded else {}
    lay.gpus = {d.name: d for d in placed.values()}
    host = "CPU" if args.no_mmap else "CPU_Mapped"
    embd = 0
    for tensor in gguf.tensors:
        layer = layer_of(tensor.name, n_layer)
        device = placed.get(layer) if layer is not None else None
        where = device.name if device else host
        lay.model[where] = lay.model.get(where, 0) + tensor.nbytes
        embd += tensor.nbytes if tensor.name == "token_embd.weight" else 0
    tied = not any(t.name == "output.weight" for t in gguf.tensors)
    if tied and lay.output_offloaded:
        out_dev = placed[n_layer].name
        lay.model[out_dev] = lay.model.get(out_dev, 0) + embd
    lay.caches = [KvCache(False, n_ctx_seq, len(kv_layers))]
    if swa_layers:
        window = int(gguf.hparam("attention.sliding_window"))
        shared = n_seq if n_stream == 1 else 1
        cells = min(n_ctx_seq, pad(window * shared + args.ubatch_size))
        lay.caches.append(KvCache(True, cells, len(swa_layers)))
    for cache, layers in zip(lay.caches, (kv_layers, swa_layers), strict=False):
        size_cache(gguf, args, lay, cache, [(i, placed.get(i)) for i in layers])
    lay.rs_seq = rs_seq
    lay.recurrent = recurrent_state(gguf, n_layer, len(kv_layers), n_seq * (1 + rs_seq))
    if lay.recurrent:
        where = next(iter(sorted(lay.gpus)), "CPU") if not args.no_kv_offload else "CPU"
        lay.kv[where] = lay.kv.get(where, 0) + lay.recurrent[1] + lay.recurrent[2]
    size_compute(gguf, args, lay)
    return lay


def plan_mtp_layout(gguf: GgufFile, args: ServerArgs, target: Layout) -> Layout:
    """The MTP draft context against the target: no weights of its own, the target's
    context and streams, one full-attention cache over the MTP blocks (on the CPU: the
    stand-in's MTP seats are CPU seats, as the recorded real one)."""
    n_layer, mtp = trunk_layers(gguf), nextn_layers(gguf)
    lay = Layout(
        n_layer,
        0,
        False,
        target.n_ctx,
        target.n_ctx_seq,
        target.n_seq,
        target.n_stream,
        mtp,
        args.cache_type_k,
        args.cache_type_v,
    )
    lay.caches = [KvCache(False, target.n_ctx_seq, mtp)]
    size_cache(gguf, args, lay, lay.caches[0], [(i, None) for i in range(n_layer, n_layer + mtp)])
    size_compute(gguf, args, lay)
    return lay


def size_cache(
    gguf: GgufFile,
    args: ServerArgs,
    lay: Layout,
    cache: KvCache,
    layers: list[tuple[int, Device | None]],
) -> None:
    """One cache's K and V bytes, on each layer's device (the CPU with --no-kv-offload)."""
    for layer, device in layers:
        where = device.name if device and not args.no_kv_offload else "CPU"
        k = cache.cells * lay.n_stream * kv_row_bytes(gguf, "k", args.cache_type_k, layer)
        v = cache.cells * lay.n_stream * kv_row_bytes(gguf, "v", args.cache_type_v, layer)
        cache.k_bytes, cache.v_bytes = cache.k_bytes + k, cache.v_bytes + v
        cache.by_device[where] = cache.by_device.get(where, 0) + k + v
        lay.k_bytes, lay.v_bytes = lay.k_bytes + k, lay.v_bytes + v
        lay.kv[where] = lay.kv.get(where, 0) + k + v


def n_vocab(gguf: GgufFile) -> int:
    """The vocabulary size: the tokenizer's tokens, else token_embd's second dimension."""
    tokens = gguf.kv.get("tokenizer.ggml.tokens")
    if tokens is not None:
        return tokens.count
    embd = next((t for t in gguf.tensors if t.name == "token_embd.weight"), None)
    return embd.dims[1] if embd is not None and len(embd.dims) > 1 else 32000


def size_compute(gguf: GgufFile, args: ServerArgs, lay: Layout) -> None:
    """Compute and output buffers (see the module docstring)."""
    ub, embd, vocab = args.ubatch_size, int(gguf.hparam("embedding_length")), n_vocab(gguf)
    activations = 4 * embd * ub * 4
    logits = vocab * ub * 4
    gpus = sorted(lay.gpus)
    if gpus:
        lay.compute[gpus[0]] = logits + activations
        for name in gpus[1:]:
            lay.compute[name] = activations
        lay.compute["CUDA_Host"] = 2 * embd * ub * 4
        lay.output = ("CUDA_Host", vocab * 4 * lay.n_seq)
    else:
        lay.compute["CPU"] = logits + activations
        lay.output = ("CPU", vocab * 4 * lay.n_seq)


def first_shortfall(lay: Layout) -> tuple[str, str, int] | None:
    """(stage, device, bytes) of the first allocation that does not fit, else None.

    Stages in llama.cpp's order: the model's weights, the KV cache, the compute buffers.
    """
    stages = (("model", lay.model), ("kv", lay.kv), ("compute", lay.compute))
    for name, device in sorted(lay.gpus.items()):
        used = CUDA_CONTEXT
        for stage, buffers in stages:
            want = buffers.get(name, 0)
            if used + want > device.free:
                return stage, name, want
            used += want
    return None
