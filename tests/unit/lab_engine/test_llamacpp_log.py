"""The llama-server stand-in's start-up log, read by fleet's own parser, says what the GGUF
header and the command line make of the model (context, slots, KV size and types, offload),
its GPU memory shows on nvidia-smi only when layers are offloaded to GPUs it was handed,
and a model that does not load ends with llama.cpp's failure lines and exit 1."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleet.engines.llamacpp import read_log
from fleet.engines.llamacpp.log import parse_llamacpp_log
from fleet.engines.vllm.log import ErrorKind
from tests.unit.lab_engine.standin import Image, StandIn, start_llama

MiB = 1 << 20
QWEN3_8B_KV_F16 = 2 * 36 * 8 * 128 * 2  # bytes per token: K and V x layers x KV heads x dim


def boot(
    image: Image,
    running: list[StandIn],
    args: list[str],
    gpus: str | None = "0",
    cuda: bool = True,
    env: dict[str, str] | None = None,
) -> StandIn:
    """Start llama-server and wait until it serves."""
    standin = start_llama(image, args, env or {}, gpus=gpus, cuda=cuda)
    running.append(standin)
    return standin.wait_healthy()


def test_the_log_gives_fleet_context_slots_and_the_kv_cache(
    image: Image, gguf_dir: Path, running: list[StandIn]
) -> None:
    model, draft = gguf_dir / "qwen3-8b-q4_k_m.gguf", gguf_dir / "qwen3-0.6b-q8_0.gguf"
    args = [
        "--model",
        str(model),
        "--alias",
        "coder",
        "--host",
        "127.0.0.1",
        "--ctx-size",
        "16384",
        "--parallel",
        "2",
        "--n-gpu-layers",
        "999",
        "--spec-type",
        "draft-simple",
        "--spec-draft-model",
        str(draft),
        "--spec-draft-n-max",
        "8",
        "--jinja",
        "-fa",
        "on",
        "-lv",
        "4",
    ]
    engine = boot(image, running, args)
    facts = parse_llamacpp_log(engine.log())
    assert facts.build == "11434 (b11434)"
    assert facts.model_path == str(model) and facts.draft_model == str(draft)
    assert (facts.arch, facts.n_ctx_train) == ("qwen3", 40960)
    assert (facts.ctx_size, facts.ctx_per_slot, facts.parallel_slots) == (16384, 8192, 2)
    assert facts.kv_unified is False
    assert facts.kv_buffer_mib == QWEN3_8B_KV_F16 * 16384 / MiB == 2304
    assert (facts.kv_type_k, facts.kv_type_v, facts.kv_on_cpu) == ("f16", "f16", False)
    assert (facts.offloaded_layers, facts.total_layers) == (37, 37)
    assert facts.listen_url == f"http://127.0.0.1:{engine.port}"
    assert facts.errors == ()
    report = read_log(engine.log())
    assert (report.max_model_len, report.kv_cache_tokens, report.max_concurrency) == (
        8192,
        16384,
        2,
    )
    assert report.kv_cache_gib == 2.25
    assert report.weights_gib is not None and 4.0 < report.weights_gib < 4.7
    [usage] = image.usage()
    assert usage["name"] == "/app/llama-server" and usage["gpu"] == 0
    held = usage["mib"]
    # b11434 gives the drafter the target's context (16384 cells): 1792 MiB of KV
    assert 4455 + 2304 + 600 + 1792 < held < 4455 + 2304 + 600 + 1792 + 1200, "target + draft"


def test_quantized_kv_types_shrink_the_cache(
    image: Image, gguf_dir: Path, running: list[StandIn]
) -> None:
    args = [
        "-m",
        str(gguf_dir / "qwen3-8b-q4_k_m.gguf"),
        "-c",
        "8192",
        "-ngl",
        "999",
        "-ctk",
        "q8_0",
        "-ctv",
        "q4_0",
        "-fa",
        "on",
        "-lv",
        "4",
    ]
    facts = parse_llamacpp_log(boot(image, running, args).log())
    assert (facts.kv_type_k, facts.kv_type_v) == ("q8_0", "q4_0")
    k = 36 * 8 * 128 * 8192 * 34 / 32
    v = 36 * 8 * 128 * 8192 * 18 / 32
    assert facts.kv_buffer_mib == pytest.approx((k + v) / MiB, abs=0.01)
    assert (facts.ctx_size, facts.ctx_per_slot, facts.parallel_slots) == (8192, 8192, 1)


def test_a_cpu_only_host_keeps_everything_on_the_cpu(
    image: Image, gguf_dir: Path, running: list[StandIn]
) -> None:
    args = ["-m", str(gguf_dir / "qwen3-0.6b-q4_k_m.gguf"), "-c", "4096", "-ngl", "999"]
    # b6100's format: its offload line (b11434 logs none on a CPU build)
    old = {"FLEET_LAB_LLAMACPP_BUILD": "6100"}
    log = boot(image, running, args, gpus=None, cuda=False, env=old).log()
    facts = parse_llamacpp_log(log)
    assert facts.kv_on_cpu is True
    assert facts.kv_buffer_mib == 2 * 28 * 8 * 128 * 2 * 4096 / MiB == 448
    assert (facts.offloaded_layers, facts.total_layers) == (0, 29)
    assert [b.device for b in facts.model_buffers] == ["CPU_Mapped"]
    assert "warning: no usable GPU found, --gpu-layers option will be ignored" in log
    assert "ggml_cuda_init" not in log
    assert image.usage() == []


@pytest.mark.parametrize(("ngl", "on_gpu"), [(0, 0), (10, 10)])
def test_only_offloaded_layers_and_their_cache_use_the_gpu(
    image: Image, gguf_dir: Path, running: list[StandIn], ngl: int, on_gpu: int
) -> None:
    args = ["-m", str(gguf_dir / "qwen3-8b-q4_k_m.gguf"), "-c", "4096", "-ngl", str(ngl)]
    facts = parse_llamacpp_log(boot(image, running, [*args, "-lv", "4"]).log())
    assert facts.offloaded_layers == on_gpu
    assert facts.kv_buffer_mib == QWEN3_8B_KV_F16 * 4096 / MiB, "the whole cache, wherever it is"
    assert facts.kv_on_cpu is (on_gpu == 0)
    assert len(image.usage()) == (1 if on_gpu else 0)


def test_b11434_on_a_cpu_only_host_warns_as_the_real_cpu_build_does(
    image: Image, gguf_dir: Path, running: list[StandIn]
) -> None:
    # The real b11434 CPU build with -ngl (tests/corpus/llamacpp-buffers: none offloads):
    # the parser's warning before the first timestamped line, no offload line, one
    # mapped model buffer.
    args = ["-m", str(gguf_dir / "qwen3-0.6b-q4_k_m.gguf"), "-c", "4096", "-ngl", "999"]
    log = boot(image, running, [*args, "-lv", "4"], gpus=None, cuda=False).log()
    assert log.startswith("warning: no usable GPU found, --gpu-layers option will be ignored\n")
    facts = parse_llamacpp_log(log)
    assert facts.build == "11434 (b11434)"
    assert (facts.kv_on_cpu, facts.kv_buffer_mib) == (True, 448)
    assert (facts.offloaded_layers, facts.total_layers) == (None, None)
    assert [b.device for b in facts.model_buffers] == ["CPU_Mapped"]
    assert image.usage() == []


def test_a_file_that_is_not_gguf_fails_to_load(
    image: Image, gguf_dir: Path, running: list[StandIn]
) -> None:
    path = gguf_dir / "not-a-model.gguf"
    engine = start_llama(image, ["-m", str(path), "-ngl", "999"], {})
    running.append(engine)
    assert engine.wait_exit() == 1
    log = engine.log()
    assert "gguf_init_from_file_impl: invalid magic characters: '<!DO', expected 'GGUF'" in log
    cause = f"llama_model_loader: failed to load model from {path}"
    assert f"llama_model_load: error loading model: {cause}" in log
    assert "main: exiting due to model loading error" in log
    assert [e.kind for e in read_log(log).errors][:1] == [ErrorKind.LOAD_FAILED]
    assert image.usage() == []


@pytest.mark.parametrize(
    ("env", "model", "line"),
    [
        ({"FLEET_LAB_FAIL": "1"}, "qwen3-0.6b-q4_k_m.gguf", "data is not within the file bounds"),
        ({}, "missing.gguf", "failed to open GGUF file"),
    ],
)
def test_failing_starts_exit_1_with_llama_cpps_lines(
    image: Image,
    gguf_dir: Path,
    running: list[StandIn],
    env: dict[str, str],
    model: str,
    line: str,
) -> None:
    engine = start_llama(image, ["-m", str(gguf_dir / model)], env)
    running.append(engine)
    assert engine.wait_exit() == 1
    assert line in engine.log()
    assert "failed to load model" in engine.log()


def test_a_model_larger_than_the_gpu_runs_out_of_memory(
    image: Image, gguf_dir: Path, running: list[StandIn]
) -> None:
    image.gpus([("NVIDIA GeForce RTX 3060", 4096)])
    engine = start_llama(image, ["-m", str(gguf_dir / "qwen3-8b-q4_k_m.gguf"), "-ngl", "999"], {})
    running.append(engine)
    assert engine.wait_exit() == 1
    log = engine.log()
    assert "cudaMalloc failed: out of memory" in log
    assert "llama_model_load: error loading model: unable to allocate CUDA0 buffer" in log
    assert ErrorKind.CUDA_OOM in [e.kind for e in read_log(log).errors]
    assert image.usage() == []
