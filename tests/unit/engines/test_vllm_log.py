"""parse_vllm_log on every recorded vLLM log; expected values read off each file by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleet.engines.vllm.log import EngineKind, EngineReport, ErrorKind, parse_vllm_log
from tests.conftest import CORPUS

LOGS = CORPUS / "vllm-logs"


def fact(**facts: object) -> dict[str, object]:
    """The explain JSON of a log: every key null/empty unless given."""
    base: dict[str, object] = {key: None for key in EngineReport().to_explain_json()}
    base.update(served_names=[], weights_gib_per_rank=[], errors=[])
    base.update(facts)
    return base


V1_SINGLE = {"engine": "V1", "tensor_parallel_size": 1, "pipeline_parallel_size": 1}

# (file, expected explain JSON with `errors` given as error kinds)
CASES = [
    (
        "v0.6.3.post1_v0_qwen2.5-32b_tp4_gpu-blocks.log",
        fact(
            version="0.6.3.post1",
            engine="V0",
            model="/workspace/StructRAG/model/Qwen2.5-32B-Instruct",
            served_names=["Qwen"],
            max_model_len=32768,
            tensor_parallel_size=4,
            pipeline_parallel_size=1,
            kv_cache_dtype="auto",
            weights_gib=15.3916,
            weights_gib_per_rank=[15.3916] * 4,  # the driver and three VllmWorkerProcess lines
            kv_cache_tokens=2987 * 16,  # "# GPU blocks: 2987", Namespace block_size=16
            max_concurrency=1.46,
        ),
    ),
    (
        "v0.8.3_v1_tinyllama_bitsandbytes_args-namespace.log",
        fact(
            **V1_SINGLE,
            version="0.8.3",
            model="TinyLlama/TinyLlama-1.1B-Chat-v1.0",
            served_names=["TinyLlama/TinyLlama-1.1B-Chat-v1.0"],
            max_model_len=512,
            quantization="bitsandbytes",
            kv_cache_dtype="auto",
            weights_gib=0.7318,
            weights_gib_per_rank=[0.7318],
            kv_cache_tokens=127664,
            max_concurrency=249.34,
        ),
    ),
    (
        "v0.8.5.post1_v1_deepseek-r1-distill-14b_concurrency-1x.log",
        fact(
            **V1_SINGLE,
            version="0.8.5.post1",
            model="/opt/llm/deepseek-r1-14b",
            served_names=["/opt/llm/deepseek-r1-14b"],
            max_model_len=32768,
            kv_cache_dtype="auto",
            weights_gib=27.5916,
            weights_gib_per_rank=[27.5916],
            kv_cache_tokens=32832,
            max_concurrency=1.0,
        ),
    ),
    (
        "v0.9.2_v1_qwen3-14b_tp4_multiproc-workers.log",
        fact(
            engine="V1",
            version="0.9.2",
            model="Qwen/Qwen3-14B",
            served_names=["Qwen/Qwen3-14B"],
            max_model_len=8192,
            tensor_parallel_size=4,
            pipeline_parallel_size=1,
            kv_cache_dtype="auto",
            weights_gib=6.9456,
            weights_gib_per_rank=[6.9456] * 4,  # VllmWorker rank=0..3, logged as 0, 2, 3, 1
            kv_cache_gib=12.79,
            kv_cache_tokens=335344,
            max_concurrency=40.94,
        ),
    ),
    (
        "v0.11.0_v1_qwen3-vl-embedding-2b_pid-prefix_available-kv-memory.log",
        fact(
            **V1_SINGLE,
            version="0.11.0+torch271",
            model="/root/Qwen3-VL-Embedding-2B",
            served_names=["Qwen3-VL-Embedding-2B"],
            max_model_len=8192,
            kv_cache_dtype="auto",
            weights_gib=4.3072,
            weights_gib_per_rank=[4.3072],
            kv_cache_gib=6.01,
            kv_cache_tokens=56288,
            max_concurrency=6.87,
        ),
    ),
    (
        "v0.11.2_v1_qwen2.5-coder-14b_single-gpu.log",
        fact(
            **V1_SINGLE,
            version="0.11.2",
            model="Qwen/Qwen2.5-Coder-14B-Instruct",
            served_names=["Qwen/Qwen2.5-Coder-14B-Instruct"],
            max_model_len=16384,
            kv_cache_dtype="auto",
            weights_gib=27.5681,
            weights_gib_per_rank=[27.5681],
            kv_cache_gib=10.93,
            kv_cache_tokens=59712,
            max_concurrency=3.64,
        ),
    ),
    (
        "v0.15.0rc2_v1_llama3-8b-w4a16-awq-compressed-tensors_offline-LLM.log",
        fact(
            **V1_SINGLE,
            version="0.15.0rc2.dev46+gc4e744dbd",
            model="Meta-Llama-3-8B-Instruct-W4A16_awq_sym",
            served_names=["Meta-Llama-3-8B-Instruct-W4A16_awq_sym"],
            max_model_len=8192,
            quantization="compressed-tensors",
            kv_cache_dtype="auto",
            weights_gib=5.32,
            weights_gib_per_rank=[5.32],
            kv_cache_gib=64.73,
            kv_cache_tokens=530288,
            max_concurrency=64.73,
        ),
    ),
    (
        "v0.17.0_v1_qwen2.5-7b_rocm_banner.log",
        fact(
            **V1_SINGLE,
            version="0.17.0",
            model="Qwen/Qwen2.5-7B-Instruct",
            served_names=["Qwen/Qwen2.5-7B-Instruct"],
            max_model_len=4096,
            kv_cache_dtype="auto",
            weights_gib=14.37,
            weights_gib_per_rank=[14.37],
            kv_cache_gib=41.81,
            kv_cache_tokens=782800,
            max_concurrency=191.11,
        ),
    ),
    (
        "v0.18.0_v1_qwen3-8b-awq_awq-marlin-quantization.log",
        fact(
            **V1_SINGLE,
            version="0.18.0",
            model="/root/fsas/vllm-lab/models/Qwen3-8B-AWQ",
            served_names=["Qwen/Qwen3-8B"],
            max_model_len=4096,
            quantization="awq_marlin",
            kv_cache_dtype="auto",
            weights_gib=5.71,
            weights_gib_per_rank=[5.71],
            kv_cache_gib=29.32,
            kv_cache_tokens=213488,
            max_concurrency=52.12,
        ),
    ),
    (
        # offline LLM(): `non-default args` names only the model; no quantization
        "v0.19.0_v1_qwen3.5-9b_hybrid-gdn-vlm-text_config_offline-LLM_l40s.log",
        fact(
            **V1_SINGLE,
            version="0.19.0",
            model="Qwen/Qwen3.5-9B",
            served_names=["Qwen/Qwen3.5-9B"],
            max_model_len=262144,
            kv_cache_dtype="auto",
            weights_gib=17.66,
            weights_gib_per_rank=[17.66],
            kv_cache_gib=20.27,
            kv_cache_tokens=165792,
            max_concurrency=2.52,
        ),
    ),
    (
        "v0.24.0_v1-mrv2_qwen3-8b_eagle3_spec-decode.log",
        fact(
            **V1_SINGLE,
            version="0.24.0",
            model="Qwen/Qwen3-8B",
            served_names=["Qwen/Qwen3-8B"],
            max_model_len=40960,
            kv_cache_dtype="auto",
            speculative={
                "method": "eagle3",
                "num_tokens": 2,
                "draft_model": "output/checkpoints/4",
            },
            weights_gib=15.78,
            weights_gib_per_rank=[15.78],
            kv_cache_gib=54.23,
            kv_cache_tokens=384176,
            max_concurrency=9.38,
        ),
    ),
    (
        "v0.25.1_v1_laguna-nvfp4-compressed-tensors_dflash-spec_dgx-spark.log",
        fact(
            **V1_SINGLE,
            version="0.25.1",
            model="poolside/Laguna-S-2.1-NVFP4",
            served_names=["poolside/Laguna-S-2.1-NVFP4"],
            max_model_len=65536,
            quantization="compressed-tensors",
            kv_cache_dtype="auto",
            speculative={
                "method": "dflash",
                "num_tokens": 15,
                "draft_model": "poolside/Laguna-S-2.1-DFlash-NVFP4",
            },
            weights_gib=95.63,
            weights_gib_per_rank=[95.63],
            kv_cache_gib=6.97,
            kv_cache_tokens=94135,
            max_concurrency=1.44,
        ),
    ),
    (
        "v0.25.1_v1_opt-125m_cpu-backend_no-available-memory-for-cache-blocks.log",
        fact(
            **V1_SINGLE,
            version="0.25.1",
            model="facebook/opt-125m",
            served_names=["facebook/opt-125m"],
            max_model_len=2048,
            kv_cache_dtype="auto",
            kv_cache_gib=0.0,  # "Explicitly set (0.0/11.65) GiB for KV cache on node 0."
            errors=[ErrorKind.NO_KV_MEMORY],
        ),
    ),
    (
        "v0.27.1_v1_qwen3.8-27b-int4-compressed-tensors_mtp_cuda-oom.log",
        fact(
            **V1_SINGLE,
            version="0.27.1",
            model="RedHatAI/Qwen3.8-27B-INT4",
            served_names=["RedHatAI/Qwen3.8-27B-INT4"],
            max_model_len=8192,
            quantization="compressed-tensors",
            kv_cache_dtype="auto",
            speculative={
                "method": "mtp",
                "num_tokens": 1,
                "draft_model": "RedHatAI/Qwen3.8-27B-INT4",
            },
            errors=[ErrorKind.CUDA_OOM],
        ),
    ),
    (
        "v0.29.0_v1-mrv2_gemma4-26b-a4b-fp8-dynamic_kv-cache-dtype-fp8_l40s.log",
        fact(
            **V1_SINGLE,
            version="0.29.0",
            model="RedHatAI/gemma-4-26B-A4B-it-FP8-dynamic",
            served_names=["gemma4-26b-l40s"],
            max_model_len=4096,
            quantization="compressed-tensors",
            kv_cache_dtype="fp8",
            weights_gib=24.72,
            weights_gib_per_rank=[24.72],
            kv_cache_gib=13.44,
            kv_cache_tokens=127625,
            max_concurrency=31.16,
        ),
    ),
    (
        # recorded in the lab from the real CPU build: the KV budget on a worker's
        # `Explicitly set (0.25/23.54) GiB ...` line, tokens and concurrency on one
        # `CPU KV cache size` line; no `Model loading took` line on the CPU
        "v0.32.0_v1_tiny-llama_cpu-backend_ngram-spec-decode.log",
        fact(
            **V1_SINGLE,
            version="0.32.0",
            model="/opt/fleet-lab/tiny-llama-80318a68bc62",
            served_names=["tiny-llama"],
            max_model_len=2048,
            kv_cache_dtype="auto",
            speculative={"method": "ngram", "num_tokens": 3, "draft_model": None},
            kv_cache_gib=0.25,
            kv_cache_tokens=524288,
            max_concurrency=256.0,
        ),
    ),
]
COVERED = frozenset(name for name, _ in CASES)


@pytest.mark.parametrize(("name", "expected"), CASES, ids=[name for name, _ in CASES])
def test_corpus_log(name: str, expected: dict[str, object]) -> None:
    report = parse_vllm_log((LOGS / name).read_text())
    actual = report.to_explain_json()
    actual["errors"] = [error.kind for error in report.errors]
    assert actual == expected


def test_explain_json_has_exactly_the_documented_keys() -> None:
    keys = set(EngineReport().to_explain_json())
    assert keys == {
        "version",
        "engine",
        "model",
        "served_names",
        "max_model_len",
        "tensor_parallel_size",
        "pipeline_parallel_size",
        "quantization",
        "kv_cache_dtype",
        "speculative",
        "weights_gib",
        "weights_gib_per_rank",
        "kv_cache_gib",
        "kv_cache_tokens",
        "max_concurrency",
        "requested_max_model_len",
        "derived_max_model_len",
        "errors",
    }


def read(name: str) -> str:
    return (LOGS / name).read_text()


def colour(text: str) -> str:
    """Colour every process prefix as vLLM does on a terminal, with CRLF line ends.

    The corpus transcriptions lost these (SOURCES.md, second fidelity caveat); the
    escape shown there is `\\x1b[1;36m(APIServer pid=1009)\\x1b[0;0m`.
    """
    lines = []
    for line in text.splitlines():
        if line.startswith("(") and ") " in line:
            prefix, rest = line.split(") ", 1)
            line = f"\x1b[1;36m{prefix})\x1b[0;0m {rest}"
        lines.append(line + "\r\n")
    return "".join(lines)


@pytest.mark.parametrize(
    "name",
    [
        "v0.11.2_v1_qwen2.5-coder-14b_single-gpu.log",
        "v0.18.0_v1_qwen3-8b-awq_awq-marlin-quantization.log",
        "v0.9.2_v1_qwen3-14b_tp4_multiproc-workers.log",
    ],
    ids=["v0.11.2", "v0.18.0", "v0.9.2-workers"],
)
def test_colours_and_crlf_change_nothing(name: str) -> None:
    assert parse_vllm_log(colour(read(name))) == parse_vllm_log(read(name))


def test_log_shipper_prefix_changes_nothing() -> None:
    text = read("v0.18.0_v1_qwen3-8b-awq_awq-marlin-quantization.log")
    shipped = "".join(f"2026-05-01 22:46:51.637 | {line}\n" for line in text.splitlines())
    assert parse_vllm_log(shipped) == parse_vllm_log(text)


def test_restarted_container_reports_its_last_start_only() -> None:
    failed = read("v0.27.1_v1_qwen3.8-27b-int4-compressed-tensors_mtp_cuda-oom.log")
    started = read("v0.24.0_v1-mrv2_qwen3-8b_eagle3_spec-decode.log")
    report = parse_vllm_log(failed + started)
    assert report == parse_vllm_log(started)
    assert report.errors == ()


def test_oom_message_is_kept_as_logged() -> None:
    report = parse_vllm_log(read("v0.27.1_v1_qwen3.8-27b-int4-compressed-tensors_mtp_cuda-oom.log"))
    (error,) = report.errors
    assert error.message.startswith("Failed to load model - not enough GPU memory.")
    assert "CUDA out of memory. Tried to allocate 2.37 GiB." in error.message


V1_HEAD = "(EngineCore pid=7) "
SYNTHETIC = [
    # (id, lines, field, expected) — lines in the formats of FACTS.md §3 / the corpus.
    (
        "several-served-names",
        [
            "(APIServer pid=1) INFO 10-09 10:00:42 [utils.py:233] non-default args: "
            "{'model': '/m', 'served_model_name': ['sec', 'sec-reasoning']}"
        ],
        "served_names",
        ("sec", "sec-reasoning"),
    ),
    (
        "v0-speculative-repr",
        [
            "INFO 03-19 06:27:20 llm_engine.py:237] Initializing an LLM engine (v0.6.3) with "
            "config: model='/m', speculative_config=SpeculativeConfig(draft_model='/d', "
            "num_spec_tokens=5), max_seq_len=4096"
        ],
        "speculative",
        {"method": None, "num_tokens": 5, "draft_model": "/d"},
    ),
    (
        "ray-repeated-suffix",
        [
            "(EngineCore_0 pid=1159) (RayWorkerWrapper pid=345, ip=10.42.11.243) INFO 09-04 "
            "01:03:03 [gpu_worker.py:276] Available KV cache memory: 50.51 GiB "
            "[repeated 3x across cluster]"
        ],
        "kv_cache_gib",
        50.51,
    ),
    (
        "cpu-auto-set-kv-budget",  # the CPU worker sizing the cache from its memory share
        [
            "(Worker pid=19850) INFO 06-13 20:03:57 [cpu_worker.py:235] Auto set (1.48/18.0) "
            "GiB for KV cache on node 0, with 5.4 GiB requested memory for the worker. 3.92 "
            "GiB memory was consumed by non-kv usages."
        ],
        "kv_cache_gib",
        1.48,
    ),
    (
        "cpu-kv-tokens-named-cpu",
        [
            "(EngineCore pid=7) INFO 12-04 18:40:03 [kv_cache_utils.py:2327] CPU KV cache "
            "size: 1,024 tokens, Maximum concurrency for 512 tokens per request: 2.00x"
        ],
        "kv_cache_tokens",
        1024,
    ),
    (
        "negative-kv-memory",
        [V1_HEAD + "INFO 08-01 21:21:47 [gpu_worker.py:538] Available KV cache memory: -0.53 GiB"],
        "kv_cache_gib",
        -0.53,
    ),
    (
        # vLLM's line when --kv-cache-memory-bytes pins the budget (no profiling), as seen
        # in public logs of 0.2x releases; it replaces "Available KV cache memory".
        "pinned-kv-budget",
        [
            V1_HEAD + "INFO 08-23 22:37:34 [gpu_worker.py:491] Initial free memory 111.7 GiB, "
            "reserved 37.11 GiB memory for KV Cache as specified by kv_cache_memory_bytes "
            "config and skipped memory profiling. This does not respect the "
            "gpu_memory_utilization config."
        ],
        "kv_cache_gib",
        37.11,
    ),
    (
        # The V0 worker's profiling summary (0.6.4 to 0.8), also seen negative.
        "v0-profiling-summary",
        [
            "INFO 12-22 10:55:34 worker.py:241] model weights take 8.51GiB; non_torch_memory "
            "takes 0.26GiB; PyTorch activation peak memory takes 0.94GiB; the rest of the "
            "memory reserved for KV Cache is -7.83GiB."
        ],
        "kv_cache_gib",
        -7.83,
    ),
    (
        "v0-cuda-blocks-uppercase",
        [
            "INFO 05-30 06:40:55 executor_base.py:110] # CUDA blocks: 5517, # CPU blocks: 9362",
            "INFO 05-30 06:40:55 executor_base.py:115] Maximum concurrency for 32768 tokens "
            "per request: 2.69x",
        ],
        "kv_cache_tokens",
        5517 * 16,
    ),
    (
        "v1-gpu-blocks-before-pr-13596",
        [V1_HEAD + "INFO 02-01 10:00:00 [kv_cache_utils.py:400] # GPU blocks: 1000"],
        "kv_cache_tokens",
        16000,
    ),
    (
        "kv-cache-too-small",
        [
            V1_HEAD + "ERROR 02-01 10:00:00 [core.py:400] ValueError: To serve at least one "
            "request with the models's max seq len (131072), (4.00 GiB KV cache is needed, "
            "which is larger than the available KV cache memory (0.65 GiB)."
        ],
        "errors",
        (ErrorKind.KV_CACHE_TOO_SMALL,),
    ),
    (
        # torch's message, as a traceback prints it (no vLLM header).
        "illegal-memory-access",
        ["RuntimeError: CUDA error: an illegal memory access was encountered"],
        "errors",
        (ErrorKind.ILLEGAL_MEMORY_ACCESS,),
    ),
    (
        "cublas",
        [
            V1_HEAD + "ERROR 02-01 10:00:00 [core.py:400] RuntimeError: CUDA error: "
            "CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasGemmEx( handle, opa, opb)`"
        ],
        "errors",
        (ErrorKind.CUBLAS,),
    ),
    (
        "advice-is-not-an-error",
        [
            "INFO 03-19 06:35:51 model_runner.py:1399] CUDA graphs can take additional 1~3 GiB"
            " memory per GPU. If you are running out of memory, consider decreasing it."
        ],
        "errors",
        (),
    ),
    (
        "same-error-twice-is-one",
        ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.37 GiB."] * 2,
        "errors",
        (ErrorKind.CUDA_OOM,),
    ),
]


@pytest.mark.parametrize(
    ("lines", "field", "expected"),
    [case[1:] for case in SYNTHETIC],
    ids=[case[0] for case in SYNTHETIC],
)
def test_line_formats(lines: list[str], field: str, expected: object) -> None:
    report = parse_vllm_log("\n".join(lines) + "\n")
    value = getattr(report, field)
    if field == "errors":
        value = tuple(error.kind for error in value)
    elif field == "speculative":
        value = value.model_dump() if value else None
    assert value == expected


@pytest.mark.parametrize(
    "text",
    ["", "\n\n", "hello world\n", "Traceback (most recent call last):\n", "\x1b[0m\r\r"],
    ids=["empty", "blank", "prose", "traceback-only", "escapes-only"],
)
def test_no_facts_is_empty_not_an_error(text: str) -> None:
    assert parse_vllm_log(text) == EngineReport()


def test_engine_kind_without_engine_line() -> None:
    text = V1_HEAD + "INFO 07-12 09:44:43 [kv_cache_utils.py:716] GPU KV cache size: 1,024 tokens"
    assert parse_vllm_log(text).engine is EngineKind.V1


def test_every_vllm_log_in_the_corpus_has_a_case() -> None:
    assert {path.name for path in LOGS.iterdir()} == COVERED


def test_corpus_exists(corpus: Path) -> None:
    assert (corpus / "vllm-logs").is_dir()


def until(name: str, marker: str) -> str:
    """A corpus log up to (not including) its first line containing `marker`."""
    lines = read(name).splitlines()
    return "\n".join(lines[: next(i for i, line in enumerate(lines) if marker in line)]) + "\n"


ENGINE_LINE = "LLM engine (v"
TP4 = "v0.9.2_v1_qwen3-14b_tp4_multiproc-workers.log"
# A start that stopped before the engine-config line (the only line naming the served
# model in these logs): the args say nothing of served names, so vLLM serves the model.
SERVED_DEFAULTS = [
    (
        "non-default-args",
        until("v0.11.2_v1_qwen2.5-coder-14b_single-gpu.log", ENGINE_LINE),
        ("Qwen/Qwen2.5-Coder-14B-Instruct",),
    ),
    (
        "non-default-args-with-model-tag",
        until("v0.17.0_v1_qwen2.5-7b_rocm_banner.log", ENGINE_LINE),
        ("Qwen/Qwen2.5-7B-Instruct",),
    ),
    (
        "namespace-served-model-name-none",
        until("v0.8.3_v1_tinyllama_bitsandbytes_args-namespace.log", ENGINE_LINE),
        ("TinyLlama/TinyLlama-1.1B-Chat-v1.0",),
    ),
    (
        "banner-only",
        until("v0.17.0_v1_qwen2.5-7b_rocm_banner.log", "non-default args"),
        ("Qwen/Qwen2.5-7B-Instruct",),
    ),
    (
        "engine-line-only",
        "\n".join(line for line in read(TP4).splitlines() if ENGINE_LINE in line).replace(
            "served_model_name=Qwen/Qwen3-14B", "served_model_name=None"
        ),
        ("Qwen/Qwen3-14B",),
    ),
    (
        # The args name a served model: that name, not the model path.
        "args-name-it",
        until("v0.18.0_v1_qwen3-8b-awq_awq-marlin-quantization.log", ENGINE_LINE),
        ("Qwen/Qwen3-8B",),
    ),
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [case[1:] for case in SERVED_DEFAULTS],
    ids=[case[0] for case in SERVED_DEFAULTS],
)
def test_served_names_default_to_the_model(text: str, expected: tuple[str, ...]) -> None:
    report = parse_vllm_log(text)
    assert report.served_names == expected
    assert report.model is not None


def test_no_model_no_served_names() -> None:
    text = V1_HEAD + "INFO 07-12 09:44:43 [kv_cache_utils.py:716] GPU KV cache size: 1,024 tokens"
    assert parse_vllm_log(text).served_names == ()


def loading_lines(name: str) -> list[str]:
    return [line for line in read(name).splitlines() if "Model loading took" in line]


def as_pipeline(lines: list[str], prefixes: list[str], gib: list[str]) -> str:
    """The real per-worker lines under other prefixes, with other figures.

    The corpus has no pipeline-parallel log; these are its TP=4 log's four lines with the
    worker names vLLM >= 0.11 gives (`Worker_PP{p}_TP{t}`) and figures that differ by
    stage, as under pipeline parallelism, where each stage holds its own layers.
    """
    out = []
    for line, prefix, figure in zip(lines, prefixes, gib, strict=True):
        rest = line.split(") ", 1)[1]
        out.append(f"{prefix} {rest.replace('6.9456 GiB', figure + ' GiB')}")
    return "\n".join(out) + "\n"


PER_RANK = [
    (
        # Logged by ranks 0, 2, 3, 1.
        "tp4-vllmworker-rank",
        read(TP4),
        (6.9456, 6.9456, 6.9456, 6.9456),
    ),
    (
        "v0-driver-and-workers",
        read("v0.6.3.post1_v0_qwen2.5-32b_tp4_gpu-blocks.log"),
        (15.3916, 15.3916, 15.3916, 15.3916),
    ),
    (
        "single-gpu",
        read("v0.11.2_v1_qwen2.5-coder-14b_single-gpu.log"),
        (27.5681,),
    ),
    (
        "pp2-tp2-worker-names",
        as_pipeline(
            loading_lines(TP4),
            [
                "(Worker_PP0_TP0 pid=13372)",
                "(Worker_PP1_TP0 pid=13374)",
                "(Worker_PP1_TP1 pid=13375)",
                "(Worker_PP0_TP1 pid=13373)",
            ],
            ["7.5", "6.25", "6.25", "7.5"],
        ),
        (7.5, 7.5, 6.25, 6.25),
    ),
    (
        "pp2-vllmworker-rank",
        as_pipeline(
            loading_lines(TP4)[:2],
            ["(VllmWorker rank=1 pid=13374)", "(VllmWorker rank=0 pid=13372)"],
            ["3.1", "4.2"],
        ),
        (4.2, 3.1),
    ),
]


@pytest.mark.parametrize(
    ("text", "per_rank"), [case[1:] for case in PER_RANK], ids=[case[0] for case in PER_RANK]
)
def test_weights_per_rank(text: str, per_rank: tuple[float, ...]) -> None:
    report = parse_vllm_log(text)
    assert report.weights_gib_per_rank == per_rank
    assert report.weights_gib == per_rank[0]
    assert report.weights_gib_total == round(sum(per_rank), 4)


def test_a_rank_that_logs_twice_counts_once() -> None:
    lines = loading_lines(TP4)
    report = parse_vllm_log("\n".join([lines[0], lines[0].replace("6.9456", "1.0")]))
    assert report.weights_gib_per_rank == (6.9456,)


def test_no_weights_no_total() -> None:
    assert EngineReport().weights_gib_total is None


def test_logs_parsed_in_threads_at_once_read_as_parsed_alone() -> None:
    """Observation parses each host's logs in its own thread. Cyclic garbage with
    finalizers makes collections run mid-parse, as paramiko's objects do in a real run;
    every thread must read every log as one thread alone does."""
    import gc
    import sys
    import threading

    class Finalized:
        def __del__(self) -> None:
            sum(range(50))

    logs = sorted(LOGS.glob("*.log"))
    alone = [parse_vllm_log(log.read_text()) for log in logs]
    failures: list[BaseException] = []

    def parse_all() -> None:
        for _ in range(3):
            for log, expected in zip(logs, alone, strict=True):
                first, second = Finalized(), Finalized()
                first.other, second.other = second, first  # type: ignore[attr-defined]
                del first, second
                try:
                    assert parse_vllm_log(log.read_text()) == expected
                except (AssertionError, SystemError) as failure:
                    failures.append(failure)
                    return

    thresholds, interval = gc.get_threshold(), sys.getswitchinterval()
    gc.set_threshold(50, 1, 1)
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=parse_all) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        gc.set_threshold(*thresholds)
        sys.setswitchinterval(interval)
    assert failures == []
