"""llama_context's lines: its parameters, output buffer, KV caches, a hybrid's recurrent
state and the compute buffers, in the widths of llama.cpp's printf formats.

Called by `loading` for the target, a draft model and b11434's MTP draft context. b11434
(`startlog.STAMPED`) prints its longer parameter names and `n_rs_seq`/`n_outputs_max`; an
iswa model logs its two caches (`llama_kv_cache_iswa: creating non-SWA KV cache, ...`
then `creating     SWA KV cache`), each with its buffers and size line; a Gated DeltaNet
hybrid its `llama_memory_recurrent` RS buffer and size line (b11434's with `rs_seq` and
`P`, the tests/corpus/llamacpp-logs b11434_cpu_tiny-qwen35moe* and b-ebbf544 logs).
"""

from __future__ import annotations

from .args import ServerArgs
from .layout import KvCache, Layout
from .startlog import STAMPED, MiB, mib


def context_lines(lay: Layout, args: ServerArgs, n_ctx_train: int, freq_base: float) -> list[str]:
    """llama_context: parameters, output, KV and compute buffers."""
    params: tuple[tuple[str, object], ...] = (
        ("n_seq_max", lay.n_seq),
        ("n_ctx", lay.n_ctx),
        ("n_ctx_seq", lay.n_ctx_seq),
        ("n_batch", args.batch_size),
        ("n_ubatch", args.ubatch_size),
        ("causal_attn", 1),
        ("flash_attn", args.flash_attn),
        ("kv_unified", "true" if lay.n_stream == 1 else "false"),
        ("freq_base", f"{freq_base:.1f}"),
        ("freq_scale", 1),
    )
    if STAMPED:
        per_seq = 1 + lay.rs_seq  # the MTP draft's tokens beside the sampled one
        params += (
            ("n_rs_seq", lay.rs_seq),
            ("n_outputs_max", lay.n_seq * per_seq),
            ("n_outputs_max_per_seq", per_seq),
        )
    width = 21 if STAMPED else 13
    out = ["llama_context: constructing llama_context"]
    out += [f"llama_context: {key:<{width}} = {value}" for key, value in params]
    if lay.n_ctx_seq < n_ctx_train:
        out.append(
            f"llama_context: n_ctx_seq ({lay.n_ctx_seq}) < n_ctx_train ({n_ctx_train}) "
            "-- the full capacity of the model will not be utilized"
        )
    where, nbytes = lay.output
    out.append(f"llama_context: {where:>10}  output buffer size = {mib(nbytes)} MiB")
    for cache in lay.caches:
        out += kv_lines(lay, cache, len(lay.caches) > 1)
    out += recurrent_lines(lay)
    for name, size in lay.compute.items():
        out.append(f"sched_reserve: {name:>10} compute buffer size = {mib(size)} MiB")
    nodes, splits = lay.n_layer * 39 + 6, len(lay.gpus) + 1 if lay.gpus else 1
    if STAMPED:
        out.append(
            f"sched_reserve: graph: nodes = {nodes}, splits = {splits}, "
            "input objects = 4, input tensors = 9"
        )
    else:
        out += [f"sched_reserve: graph nodes  = {nodes}", f"sched_reserve: graph splits = {splits}"]
    return out


def kv_lines(lay: Layout, cache: KvCache, iswa: bool) -> list[str]:
    """One KV cache's buffers and size line (an iswa model's caches each say which)."""
    out = []
    if iswa:
        kind = "    SWA" if cache.swa else "non-SWA"
        out.append(f"llama_kv_cache_iswa: creating {kind} KV cache, size = {cache.cells} cells")
    for name, size in sorted(cache.by_device.items(), key=lambda kv: kv[0] == "CPU"):
        out.append(f"llama_kv_cache: {name:>10} KV buffer size = {mib(size)} MiB")
    total = cache.k_bytes + cache.v_bytes
    out.append(
        f"llama_kv_cache: size = {total / MiB:7.2f} MiB ({cache.cells:6d} cells, "
        f"{cache.layers:3d} layers, {lay.n_seq:2d}/{lay.n_stream} seqs), "
        f"K ({lay.type_k}): {cache.k_bytes / MiB:7.2f} MiB, V ({lay.type_v}): "
        f"{cache.v_bytes / MiB:7.2f} MiB"
    )
    return out


def recurrent_lines(lay: Layout) -> list[str]:
    """A hybrid's recurrent state (llama_memory_recurrent), as b11434 and b-ebbf544 log it."""
    if lay.recurrent is None:
        return []
    layers, r, s = lay.recurrent
    where = next((name for name in sorted(lay.kv) if name != "CPU"), "CPU")
    cells, tail = lay.n_seq, f"R (f32): {r / MiB:7.2f} MiB, S (f32): {s / MiB:7.2f} MiB"
    seqs = f"{lay.n_seq:2d} seqs"
    if STAMPED:
        seqs += f" {lay.rs_seq:2d} rs_seq"
        tail += f", P (f32): {0:7.2f} MiB"
    return [
        f"llama_memory_recurrent: {where:>10} RS buffer size = {mib(r + s)} MiB",
        f"llama_memory_recurrent: size = {(r + s) / MiB:7.2f} MiB ({cells:6d} cells, "
        f"{layers:3d} layers, {seqs}), {tail}",
    ]
