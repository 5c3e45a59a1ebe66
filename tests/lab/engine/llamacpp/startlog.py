"""llama-server's start-up log, line for line, in the shapes of tests/corpus/llamacpp-logs.

The stand-in's build (FLEET_LAB_LLAMACPP_BUILD) picks the format:
- before b11434, the classic (non-timestamped) format of the `b-ebbf544` corpus log:
  ggml_cuda_init and load_backend, build and system info, the loader's metadata dump,
  print_info, load_tensors with its offload count and model buffers, llama_context's
  parameters, the KV buffers and `llama_kv_cache: size = ...`, compute buffers, slots,
  `main: server is listening on ...`;
- b11434's (the `b11434_cpu_tiny-llama-4l_*` corpus logs): every line timestamped
  (`0.00.083.864 I `), the build and every library line (loader, print_info, buffers,
  KV caches) only at `-lv 4`; at the default verbosity 3 the server's own few lines.
Either way a model with interleaved sliding-window attention logs its two caches
(`llama_kv_cache_iswa: creating non-SWA KV cache, ...` then `creating     SWA KV cache`),
each with its KV buffers and size line (the `b11434_cpu_tiny-gemma3_*` corpus logs), and
b11434's MTP draft context (`--spec-type draft-mtp`) its own llama_context after
`common_speculative_init_result: creating MTP draft context against the target model`
(`b11434_cpu_tiny-qwen35moe-mtp_*`). llama.cpp logs to stderr. Widths follow
llama.cpp's printf formats.
"""

from __future__ import annotations

import sys
import time
from collections import Counter

from .args import BUILD as BUILD_NUMBER
from .args import ServerArgs
from .gguf import GGML_TYPES, GgufFile, Value
from .layout import Device, Layout

MiB, GiB = 1 << 20, 1 << 30
STAMPED_SINCE = 11434  # the first build the stand-in knows in the timestamped format
STAMPED = BUILD_NUMBER >= STAMPED_SINCE
COMMIT = f"b{BUILD_NUMBER}" if STAMPED else "fleetlab"  # b11434 names its tag as its commit
BUILD = f"{BUILD_NUMBER} ({COMMIT})"
STARTED = time.monotonic()
COMPILER = "cc (Ubuntu 13.3.0-6ubuntu2~24.04) 13.3.0 for x86_64-linux-gnu"
MAX_VALUE_LEN = 40
FILE_TYPES = {
    0: "all F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1",
    10: "Q2_K - Medium", 11: "Q3_K - Small", 12: "Q3_K - Medium", 13: "Q3_K - Large",
    14: "Q4_K - Small", 15: "Q4_K - Medium", 16: "Q5_K - Small", 17: "Q5_K - Medium",
    18: "Q6_K", 19: "IQ2_XXS - 2.0625 bpw", 20: "IQ2_XS - 2.3125 bpw", 21: "Q2_K - Small",
    22: "IQ3_XS - 3.3 bpw", 23: "IQ3_XXS - 3.0625 bpw", 24: "IQ1_S - 1.5625 bpw",
    25: "IQ4_NL - 4.5 bpw", 26: "IQ3_S - 3.4375 bpw", 27: "IQ3_S mix - 3.66 bpw",
    28: "IQ2_S - 2.5 bpw", 29: "IQ2_M - 2.7 bpw", 30: "IQ4_XS - 4.25 bpw",
    31: "IQ1_M - 1.75 bpw", 32: "BF16", 38: "MXFP4 MoE",
}  # fmt: skip
CAPABILITY = {"3090": "8.6", "4090": "8.9", "4060": "8.9", "L40": "8.9", "A100": "8.0",
              "H100": "9.0", "H200": "9.0", "Blackwell": "12.0", "5090": "12.0"}  # fmt: skip


def stamp(level: str = "I") -> str:
    """b11434's line prefix: minutes.seconds.ms.us since start and the level."""
    us = int((time.monotonic() - STARTED) * 1e6)
    m, rest = divmod(us, 60_000_000)
    s, rest = divmod(rest, 1_000_000)
    return f"{m}.{s:02d}.{rest // 1000:03d}.{rest % 1000:03d} {level} "


def emit(line: str, level: str = "I") -> None:
    """One log line on stderr (timestamped from b11434 on)."""
    sys.stderr.write((stamp(level) if STAMPED else "") + line + "\n")
    sys.stderr.flush()


def srv(func: str, message: str) -> str:
    """`srv  <func>: message` (function names right-aligned, cut to 12)."""
    return f"srv  {func[:12]:>12}: {message}"


def slot(func: str, slot_id: int, task: int, message: str) -> str:
    """`slot <func>: id  N | task T | message`."""
    return f"slot {func[:12]:>12}: id {slot_id:2d} | task {task} | {message}"


def mib(nbytes: float) -> str:
    """%8.2f MiB."""
    return f"{nbytes / MiB:8.2f}"


def capability(name: str) -> str:
    """The compute capability ggml_cuda_init prints for a card."""
    return next((cc for key, cc in CAPABILITY.items() if key in name), "8.0")


def backend_lines(cuda_build: bool, devices: list[Device], wants_gpu: bool) -> list[str]:
    """ggml's device discovery and the backends it loads."""
    out: list[str] = []
    if cuda_build and devices:
        total = sum(d.gpu.total_bytes for d in devices) // MiB
        out.append(f"ggml_cuda_init: found {len(devices)} CUDA devices (Total VRAM: {total} MiB):")
        for d in devices:
            vram = d.gpu.total_bytes // MiB
            cc = capability(d.gpu.name)
            out.append(
                f"  Device {d.position}: {d.gpu.name}, compute capability {cc}, "
                f"VMM: yes, VRAM: {vram} MiB"
            )
        out.append("load_backend: loaded CUDA backend from /app/libggml-cuda.so")
    elif cuda_build:
        out.append("ggml_cuda_init: failed to initialize CUDA: no CUDA-capable device is detected")
    out.append("load_backend: loaded CPU backend from /app/libggml-cpu-haswell.so")
    return out + no_gpu_warnings(cuda_build, devices, wants_gpu)


def no_gpu_warnings(cuda_build: bool, devices: list[Device], wants_gpu: bool) -> list[str]:
    """What common/arg.cpp prints for `-ngl` when no GPU can take layers."""
    if not wants_gpu or (cuda_build and devices):
        return []
    return [
        "warning: no usable GPU found, --gpu-layers option will be ignored",
        "warning: one possible reason is that llama.cpp was compiled without GPU support",
        "warning: consult docs/build.md for compilation instructions",
    ]


def build_lines(args: ServerArgs, cuda: bool) -> list[str]:
    """build, system info and the HTTP server's set-up."""
    cuda_info = (
        "CUDA : ARCHS = 500,610,700,750,800,860,890,1200 | USE_GRAPHS = 1 | " if cuda else ""
    )
    cpu = "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | "
    t = args.threads
    return [
        f"build: {BUILD} with {COMPILER}",
        f"system info: n_threads = {t}, n_threads_batch = {t}, total_threads = {2 * t}",
        "",
        f"system_info: n_threads = {t} (n_threads_batch = {t}) / {2 * t} | {cuda_info}{cpu}"
        "LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 | ",
        "",
        "Running without SSL",
        "init: using 15 threads for HTTP server",
        "start: binding port with default address family",
        "main: loading model",
    ]


def value_text(value: Value) -> str:
    """A metadata value as the loader prints it (cut to 40 characters)."""
    v = value.value
    if isinstance(v, list):
        items = [f'"{x}"' if isinstance(x, str) else value_text(Value("", x)) for x in v]
        text = "[" + ", ".join(items) + (", ...]" if value.count > len(v) else "]")
    elif isinstance(v, bool):
        text = "true" if v else "false"
    elif isinstance(v, float):
        text = f"{v:f}"
    else:
        text = str(v).replace("\n", "\\n")
    return text if len(text) <= MAX_VALUE_LEN else text[: MAX_VALUE_LEN - 3] + "..."


def loader_lines(gguf: GgufFile, device: Device | None) -> list[str]:
    """llama_model_loader's dump of the file's metadata and tensor types."""
    out = []
    if device is not None:
        free = device.free // MiB
        bus = f"0000:{device.gpu.index + 1:02x}:00.0"
        out.append(
            f"llama_model_load_from_file_impl: using device {device.name} "
            f"({device.gpu.name}) ({bus}) - {free} MiB free"
        )
    out += [
        f"llama_model_loader: loaded meta data with {len(gguf.kv)} key-value pairs and "
        f"{len(gguf.tensors)} tensors from {gguf.path} (version GGUF V{gguf.version} (latest))",
        "llama_model_loader: Dumping metadata keys/values. Note: KV overrides do not apply "
        "in this output.",
    ]
    for i, (key, value) in enumerate(gguf.kv.items()):
        out.append(
            f"llama_model_loader: - kv {i:3d}: {key:>42} {value.type_name:<16} = "
            f"{value_text(value)}"
        )
    counts = Counter(t.ggml_type for t in gguf.tensors)
    for ggml_type, count in sorted(counts.items()):
        name = GGML_TYPES.get(ggml_type, (f"type{ggml_type}", 1, 1))[0]
        out.append(f"llama_model_loader: - type {name:>4}: {count:4d} tensors")
    return out


def info(key: str, value: object) -> str:
    """One print_info line."""
    return f"print_info: {key:<22}= {value}"


def params_text(n: int) -> str:
    """Parameter count as print_info prints it (K, M or B)."""
    for scale, unit in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return str(n)


def print_info_lines(gguf: GgufFile, vocab: int) -> list[str]:
    """The file and hyper-parameter summary."""
    size = sum(t.nbytes for t in gguf.tensors)
    params = sum(t.elements for t in gguf.tensors)
    shown = f"{size / MiB:.2f} MiB" if size < GiB else f"{size / GiB:.2f} GiB"
    heads = int(gguf.hparam("attention.head_count", 1))
    kv_heads = gguf.hparam("attention.head_count_kv", heads)
    kv_heads = max(kv_heads) if isinstance(kv_heads, list) else int(kv_heads)
    embd = int(gguf.hparam("embedding_length"))
    head_k = int(gguf.hparam("attention.key_length") or embd // heads)
    head_v = int(gguf.hparam("attention.value_length") or head_k)
    return [
        f"print_info: file format = GGUF V{gguf.version} (latest)",
        f"print_info: file type   = {FILE_TYPES.get(gguf.get('general.file_type', 0), '?')}",
        f"print_info: file size   = {shown} ({size * 8 / max(params, 1):.2f} BPW) ",
        info("arch", gguf.arch),
        info("vocab_only", 0),
        info("n_ctx_train", gguf.hparam("context_length")),
        info("n_embd", embd),
        info(
            "n_layer", int(gguf.hparam("block_count")) - int(gguf.hparam("nextn_predict_layers", 0))
        ),
        *([info("n_layer_all", gguf.hparam("block_count"))] if STAMPED else []),
        info("n_head", heads),
        info("n_head_kv", kv_heads),
        info("n_rot", int(gguf.hparam("rope.dimension_count") or head_k)),
        info("n_embd_head_k", head_k),
        info("n_embd_head_v", head_v),
        info("n_gqa", heads // max(kv_heads, 1)),
        info("n_embd_k_gqa", head_k * kv_heads),
        info("n_embd_v_gqa", head_v * kv_heads),
        info("n_ff", gguf.hparam("feed_forward_length", 0)),
        info("freq_base_train", f"{float(gguf.hparam('rope.freq_base', 10000.0)):.1f}"),
        info("model type", gguf.get("general.size_label", "?B")),
        info("model params", params_text(params)),
        info("general.name", gguf.get("general.name", "n/a")),
        info("vocab type", "BPE"),
        info("n_vocab", vocab),
    ]


def tensor_lines(lay: Layout, mmap: bool, gpu_build: bool = False) -> list[str]:
    """load_tensors: offload and model buffers. b11434 logs the offload wherever the build
    can offload (llama_supports_gpu_offload: a GPU is there), also 0 layers; b6100 always."""
    mode = f"load_mode = {'mmap' if mmap else 'none'}" if STAMPED else f"mmap = {str(mmap).lower()}"
    out = [f"load_tensors: loading model tensors, this can take a while... ({mode})"]
    if lay.output_offloaded:
        out.append("load_tensors: offloading output layer to GPU")
    if lay.gpus or (STAMPED and gpu_build):
        out.append(f"load_tensors: offloading {lay.offloaded_repeating} repeating layers to GPU")
    if lay.gpus or gpu_build or not STAMPED:
        out.append(f"load_tensors: offloaded {lay.offloaded}/{lay.n_layer + 1} layers to GPU")
    for name, nbytes in lay.model.items():
        out.append(f"load_tensors: {name:>12} model buffer size = {mib(nbytes)} MiB")
    return out if STAMPED else [*out, "." * 90]


def slot_lines(n_slots: int, n_ctx_slot: int) -> list[str]:
    """The server's slots."""
    out = [srv("load_model", f"initializing slots, n_slots = {n_slots}")]
    out += [slot("load_model", i, -1, f"new slot, n_ctx = {n_ctx_slot}") for i in range(n_slots)]
    return out


def ready_lines(host: str, port: int) -> list[str]:
    """The model is loaded and the main loop starts."""
    return [
        "main: model loaded",
        f"main: server is listening on http://{host}:{port}",
        "main: starting the main loop...",
        srv("update_slots", "all slots are idle"),
    ]
