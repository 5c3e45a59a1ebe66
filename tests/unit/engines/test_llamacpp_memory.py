"""A llama.cpp seat's predicted buffers against those the real llama-server b11434 logged
for the same model and flags (tests/corpus/llamacpp-buffers and one of llamacpp-logs,
recorded in the lab; the models' headers as fleet parses them in
llamacpp-buffers/b11434_tiny-gguf-headers.json): the weights, the KV cache,
the compute buffer and the output buffer, each within 5%."""

from __future__ import annotations

import json
import re

import pytest

from fleet.engines import predict_memory
from fleet.facts.gguf import GgufFacts
from fleet.spec.models import Seat
from tests.conftest import CORPUS
from tests.unit.engines.test_llamacpp_verbosity import coder

BUFFERS = CORPUS / "llamacpp-buffers"
HEADERS = json.loads((BUFFERS / "b11434_tiny-gguf-headers.json").read_text())
BUFFER = re.compile(r"(?P<part>model|KV|RS|compute|output) buffer size =\s+(?P<mib>[\d.]+) MiB")
# a hybrid's recurrent state (`llama_memory_recurrent: ... RS buffer size`) is KV to plan
PARTS = {"model": "weights", "KV": "kv", "RS": "kv", "compute": "compute", "output": "output"}
TINY = "tiny-llama-4l.gguf"

# (log, model, context per slot, slots, extra flags): the flags each run was started with
RUNS = {
    "np2": ("../llamacpp-logs/b11434_cpu_tiny-llama-4l_lv4_np2.log", TINY, 2048, 2, ()),
    "np4-q8-cache": (
        "b11434_cpu_tiny-llama-4l_lv4_np4_q8-cache_no-repack.log",
        TINY,
        2048,
        4,
        ("-ctk", "q8_0", "-ctv", "q8_0"),
    ),
    "ubatch-128": (
        "b11434_cpu_tiny-llama-4l_lv4_ub128_no-repack.log",
        TINY,
        2048,
        1,
        ("-ub", "128"),
    ),
    "flash-attention-off": (
        "b11434_cpu_tiny-llama-4l_lv4_fa-off_no-repack.log",
        TINY,
        2048,
        1,
        ("-fa", "off"),
    ),
    "width-512-context-8192": (
        "b11434_cpu_tiny-llama-w512-2l_lv4_c8192_no-repack.log",
        "tiny-llama-w512-2l.gguf",
        8192,
        1,
        (),
    ),
    "width-128-two-slots": (
        "b11434_cpu_tiny-llama-w128-2l_lv4_c4096_np2_no-repack.log",
        "tiny-llama-w128-2l.gguf",
        2048,
        2,
        (),
    ),
    # the lab's iswa and hybrid architectures (tests/lab/real/tinyarchs.py, -nr -c 8192)
    "gemma3-iswa-one-slot": (
        "../llamacpp-logs/b11434_cpu_tiny-gemma3_lv4_c8192_iswa.log",
        "tiny-gemma3.gguf",
        8192,
        1,
        (),
    ),
    "gemma3-iswa-two-slots-ubatch-128": (
        "../llamacpp-logs/b11434_cpu_tiny-gemma3_lv4_c8192_np2_ub128_iswa.log",
        "tiny-gemma3.gguf",
        4096,
        2,
        ("-ub", "128"),
    ),
    "qwen35moe-hybrid-two-slots": (
        "../llamacpp-logs/b11434_cpu_tiny-qwen35moe_lv4_c8192_np2_hybrid.log",
        "tiny-qwen35moe.gguf",
        4096,
        2,
        (),
    ),
}


def logged(text: str) -> dict[str, float]:
    """The MiB of each buffer a log states (a part logged twice: the sum)."""
    found: dict[str, float] = {}
    for match in BUFFER.finditer(text):
        part = PARTS[match["part"]]
        found[part] = found.get(part, 0.0) + float(match["mib"])
    return found


def cpu_seat(context: int, slots: int, extra: tuple[str, ...]) -> Seat:
    return coder().model_copy(
        update={"context": context, "parallel": slots, "gpus": (), "extra_args": extra}
    )


@pytest.mark.parametrize(("log", "model", "context", "slots", "extra"), RUNS.values(), ids=RUNS)
def test_each_predicted_buffer_is_within_5_percent_of_the_logged_one(
    log: str, model: str, context: int, slots: int, extra: tuple[str, ...]
) -> None:
    entry = HEADERS[model]
    header = GgufFacts.model_validate(entry["header"])
    memory = predict_memory(cpu_seat(context, slots, extra), header, entry["size_bytes"], "RAM")
    assert memory is not None
    real = logged((BUFFERS / log).read_text())
    assert set(real) == set(PARTS.values())
    for part, mib in real.items():
        predicted = getattr(memory, part) / 2**20
        assert abs(predicted - mib) <= 0.05 * mib + 0.01, f"{part}: {predicted:.2f} vs {mib}"


def test_a_header_cut_before_its_tensors_sizes_the_weights_by_the_file() -> None:
    entry = HEADERS[TINY]
    cut = {k: v for k, v in entry["header"].items() if "tensor_bytes" not in k}
    header = GgufFacts.model_validate(cut)
    memory = predict_memory(cpu_seat(2048, 2, ()), header, entry["size_bytes"], "RAM")
    assert memory is not None and memory.weights == entry["size_bytes"]
    assert (
        abs(memory.weights / 2**20 - logged((BUFFERS / RUNS["np2"][0]).read_text())["weights"])
        <= 0.05 * 36.26
    )


def test_a_gpu_seat_leaves_token_embd_and_the_logits_in_host_memory() -> None:
    entry = HEADERS[TINY]
    header = GgufFacts.model_validate(entry["header"])
    seat = cpu_seat(2048, 2, ()).model_copy(update={"gpus": (0,)})
    memory = predict_memory(seat, header, entry["size_bytes"], "GPU 0")
    assert memory is not None
    assert memory.weights == header.tensor_bytes - header.input_tensor_bytes  # type: ignore[operator]
    assert memory.device_bytes == memory.weights + memory.kv + memory.compute
