"""llama.cpp's lines for a model that does not load, from the first complaint to the exit.

Three ways, as real llama-server logs show them: gguf's reader rejects the file (`invalid
magic characters`, `failed to open GGUF file`) and the loader gives up; the loader
itself rejects it (`error loading model: ...`: truncated data, a missing
hyper-parameter); or a buffer does not fit its GPU (`cudaMalloc failed: out of memory`
for the weights, the KV cache or the compute buffers). All end with `main: exiting due to
model loading error` (exit 1).
"""

from __future__ import annotations

from .startlog import MiB, srv


def failure_lines(path: str, message: str, by_loader: bool) -> list[str]:
    """A model that does not load, from the reader's complaint to the exit."""
    out = [] if by_loader else [f"gguf_init_from_file_impl: {message}"]
    cause = message if by_loader else f"llama_model_loader: failed to load model from {path}"
    return [*out, f"llama_model_load: error loading model: {cause}", *load_failed_tail(path)]


def load_failed_tail(path: str) -> list[str]:
    """What every load failure ends with."""
    return [
        "llama_model_load_from_file_impl: failed to load model",
        f"common_init_from_params: failed to load model '{path}'",
        srv("load_model", f"failed to load model, '{path}'"),
        srv("operator()", "operator(): cleaning up before exit..."),
        "main: exiting due to model loading error",
    ]


def shortfall_lines(path: str, stage: str, device: str, want: int) -> list[str]:
    """A buffer that does not fit on its GPU: cudaMalloc's failure and what follows."""
    index = device.removeprefix("CUDA")
    out = [
        f"ggml_backend_cuda_buffer_type_alloc_buffer: allocating {want / MiB:.2f} MiB on "
        f"device {index}: cudaMalloc failed: out of memory"
    ]
    if stage == "model":
        out += [
            f"alloc_tensor_range: failed to allocate {device} buffer of size {want}",
            f"llama_model_load: error loading model: unable to allocate {device} buffer",
        ]
        return out + load_failed_tail(path)
    reason = "failed to allocate buffer for kv cache"
    if stage == "compute":
        out.append(f"ggml_gallocr_reserve_n: failed to allocate {device} buffer of size {want}")
        reason = "failed to allocate compute pp buffers"
    out += [
        f"llama_init_from_model: failed to initialize the context: {reason}",
        f"common_init_from_params: failed to create context with model '{path}'",
    ]
    return out + load_failed_tail(path)[2:]
