"""parse_llamacpp_log on the recorded llama-server logs, and on the draft/multi-GPU lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleet.engines import engine_for
from fleet.engines.llamacpp.log import DeviceBuffer, LlamaCppReport, parse_llamacpp_log
from fleet.engines.report import SpeculativeFact
from fleet.facts.engine_metrics import sum_samples
from tests.conftest import CORPUS
from tests.unit.engines.test_llamacpp_flags import drafted_seat
from tests.unit.facts import samples

LOGS = CORPUS / "llamacpp-logs"
TINY = "/opt/fleet-lab/llama-server-b11434/models/tiny-llama-4l.gguf"
TINY_DRAFT = "/opt/fleet-lab/llama-server-b11434/models/tiny-llama-draft-1l.gguf"
TINY_LV4 = LlamaCppReport(
    build="11434 (b11434)",
    model_path=TINY,
    arch="llama",
    n_ctx_train=2048,
    ctx_size=4096,
    ctx_per_slot=2048,
    parallel_slots=2,
    kv_unified=False,
    kv_cells=4096,
    kv_buffer_mib=16.0,
    kv_type_k="f16",
    kv_type_v="f16",
    kv_on_cpu=True,
    model_size_gib=0.0354,
    model_buffers=(DeviceBuffer(device="CPU_Mapped", mib=36.26),),
    listen_url="http://127.0.0.1:58037",
)

CASES = [
    (
        "b-ebbf544_cuda-rtx4060ti_qwen3.5-35b-a3b-iq2m_hybrid-kv-recurrent_nparallel-auto4.log",
        LlamaCppReport(
            build="1 (ebbf544)",
            model_path="models/Qwen3.5-35B-A3B-Uncensored-HauhauCS-Aggressive-IQ2_M.gguf",
            arch="qwen35moe",
            n_ctx_train=262144,
            ctx_size=6912,
            ctx_per_slot=6912,
            parallel_slots=4,
            kv_unified=True,
            kv_cells=6912,  # `(  6912 cells,  10 layers,  4/1 seqs)`: one stream
            kv_buffer_mib=135.0,
            kv_type_k="f16",
            kv_type_v="f16",
            kv_on_cpu=False,  # `llama_kv_cache:      CUDA0 KV buffer size`
            recurrent_state_mib=251.25,
            model_size_gib=10.73,
            model_buffers=(
                DeviceBuffer(device="CPU_Mapped", mib=208.40),
                DeviceBuffer(device="CUDA0", mib=10783.98),
            ),
            offloaded_layers=41,
            total_layers=41,
            listen_url="http://0.0.0.0:11436",
        ),
    ),
    (
        # Verbosity-3 format: no KV or model-size lines are printed at all.
        "master-2026_cuda-rtx3090_qwen3.8-27b-q4kxl_verbosity3_slots1.log",
        LlamaCppReport(
            model_path="/home/thc1006/dev/qwen3.8-speculative-decoding-rtx3090/models/target/"
            "Qwen3.8-27B-UD-Q4_K_XL.gguf",
            ctx_per_slot=8192,
            parallel_slots=1,
            kv_unified=False,
            listen_url="http://127.0.0.1:18138",
        ),
    ),
    (
        # The real b11434 (the lab's build) at its default verbosity, 3: the slots and
        # their context, no build, model size or KV cache line.
        "b11434_cpu_tiny-llama-4l_verbosity3_np2.log",
        LlamaCppReport(
            model_path=TINY,
            ctx_per_slot=2048,
            parallel_slots=2,
            kv_unified=False,
            listen_url="http://127.0.0.1:47519",
        ),
    ),
    (
        "b11434_cpu_tiny-llama-4l_verbosity3_np2_draft-simple.log",
        LlamaCppReport(
            model_path=TINY,
            ctx_per_slot=2048,
            parallel_slots=2,
            kv_unified=False,
            draft_model=TINY_DRAFT,
            speculative_method="draft",
            listen_url="http://127.0.0.1:54413",
        ),
    ),
    (
        # -lv 4: the build is a trace (`common_params_print_info: build 11434 (b11434)`),
        # the KV size line counts 2048 cells in each of 2 streams.
        "b11434_cpu_tiny-llama-4l_lv4_np2.log",
        TINY_LV4,
    ),
    (
        # With a drafter: its KV cache (1 MiB) is its own; the implementation and its k
        # are traced (`adding speculative implementation 'draft-simple'`, `- n_max=4`).
        "b11434_cpu_tiny-llama-4l_lv4_np2_draft-simple.log",
        TINY_LV4.model_copy(
            update={
                "draft_model": TINY_DRAFT,
                "draft_kv_buffer_mib": 1.0,
                "speculative_method": "draft",
                "speculative_type": "draft-simple",
                "draft_max": 4,
                "listen_url": "http://127.0.0.1:57873",
            }
        ),
    ),
]
CASES += [
    (
        # Interleaved sliding-window attention (gpt-oss-20b, build 6699): two caches of the
        # seat's own, the full one (3072 MiB) and the SWA one (18 MiB); no drafter.
        "b6699_cuda-rtx3070_gpt-oss-20b_iswa-two-caches.log",
        LlamaCppReport(
            ctx_size=131072,
            ctx_per_slot=131072,
            parallel_slots=1,
            kv_unified=False,
            kv_cells=131072,
            kv_buffer_mib=3090.0,
            kv_type_k="f16",
            kv_type_v="f16",
            kv_on_cpu=False,
            model_buffers=(
                DeviceBuffer(device="CUDA0", mib=1242.03),
                DeviceBuffer(device="CPU_Mapped", mib=10949.33),
            ),
            offloaded_layers=25,
            total_layers=25,
        ),
    ),
    (
        # The model's own MTP head drafting (`creating MTP draft context against the target
        # model`, `adding speculative implementation 'draft-mtp'`, k = 2).
        "master-2026_cuda-rtx5090_qwopus3.6-27b-mtp_draft-mtp_verbosity3.log",
        LlamaCppReport(
            model_path="/root/.cache/huggingface/hub/models--Jackrong--Qwopus3.6-27B-v2-MTP-"
            "GGUF/snapshots/5a93ddf665b431238d479f55a9fa9a503a64084b/Qwopus3.6-27B-v2-MTP-"
            "Q4_K_M.gguf",
            ctx_per_slot=131072,
            parallel_slots=4,
            kv_unified=True,
            speculative_method="mtp",
            speculative_type="draft-mtp",
            draft_max=2,
        ),
    ),
]
# The real b11434 on the lab's tiny gemma3 and qwen35moe models (tests/lab/real/tinyarchs.py,
# -lv 4, -c 8192): an iswa model's two caches are both the seat's KV, a hybrid's cache
# holds its attention layers only beside its recurrent state, and the MTP draft context's
# cache is the drafter's.
TINY_MODELS = "/opt/fleet-lab/llama-server-b11434/models/"
GEMMA3_LV4 = LlamaCppReport(
    build="11434 (b11434)",
    model_path=TINY_MODELS + "tiny-gemma3.gguf",
    arch="gemma3",
    n_ctx_train=32768,
    ctx_size=8192,
    ctx_per_slot=8192,
    parallel_slots=1,
    kv_unified=False,
    kv_cells=8192,
    kv_buffer_mib=6.5,  # non-SWA 8192 cells x 1 layer 4.00 + SWA 1024 cells x 5 layers 2.50
    kv_type_k="f16",
    kv_type_v="f16",
    kv_on_cpu=True,
    model_size_gib=0.0233,
    model_buffers=(DeviceBuffer(device="CPU_Mapped", mib=23.91),),
    listen_url="http://127.0.0.1:44991",
)
QWEN35MOE_LV4 = GEMMA3_LV4.model_copy(
    update={
        "model_path": TINY_MODELS + "tiny-qwen35moe.gguf",
        "arch": "qwen35moe",
        "n_ctx_train": 262144,
        "ctx_per_slot": 4096,
        "parallel_slots": 2,
        "kv_buffer_mib": 8.0,  # `(4096 cells, 2 layers, 2/2 seqs)`: 2 of its 8 layers
        "recurrent_state_mib": 0.22,
        "model_size_gib": 0.0404,
        "model_buffers": (DeviceBuffer(device="CPU_Mapped", mib=41.35),),
        "listen_url": "http://127.0.0.1:59969",
    }
)
CASES += [
    ("b11434_cpu_tiny-gemma3_lv4_c8192_iswa.log", GEMMA3_LV4),
    (
        "b11434_cpu_tiny-gemma3_lv4_c8192_np2_ub128_iswa.log",
        GEMMA3_LV4.model_copy(
            update={
                "ctx_per_slot": 4096,
                "parallel_slots": 2,
                "kv_buffer_mib": 7.75,  # 4.00 + SWA 768 cells in each of 2 streams 3.75
                "listen_url": "http://127.0.0.1:40331",
            }
        ),
    ),
    ("b11434_cpu_tiny-qwen35moe_lv4_c8192_np2_hybrid.log", QWEN35MOE_LV4),
    (
        "b11434_cpu_tiny-qwen35moe-mtp_lv4_c8192_np2_draft-mtp.log",
        QWEN35MOE_LV4.model_copy(
            update={
                "model_path": TINY_MODELS + "tiny-qwen35moe-mtp.gguf",
                "recurrent_state_mib": 0.67,
                "model_size_gib": 0.042,
                "model_buffers": (DeviceBuffer(device="CPU_Mapped", mib=43.05),),
                "draft_kv_buffer_mib": 4.0,
                "speculative_method": "mtp",
                "speculative_type": "draft-mtp",
                "draft_max": 2,
                "listen_url": "http://127.0.0.1:39403",
            }
        ),
    ),
    (
        # MTP asked of a model without MTP blocks: b11434 exits, and says why.
        "b11434_cpu_tiny-qwen35moe_lv4_draft-mtp_no-mtp-layers.log",
        QWEN35MOE_LV4.model_copy(
            update={
                "ctx_per_slot": None,
                "parallel_slots": None,
                "recurrent_state_mib": 0.67,
                "speculative_method": "mtp",
                "listen_url": None,
                "errors": (
                    "0.00.561.216 E common_speculative_init_result: failed to create MTP context",
                    "0.00.561.219 E srv    load_model: failed to create MTP context",
                ),
            }
        ),
    ),
]
COVERED = frozenset(name for name, _ in CASES)


@pytest.mark.parametrize(("name", "expected"), CASES, ids=[name for name, _ in CASES])
def test_corpus_log(name: str, expected: LlamaCppReport) -> None:
    assert parse_llamacpp_log((LOGS / name).read_text()) == expected


# Lines in the format of the source (llama-kv-cache.cpp `%s: %10s KV buffer size = %8.2f
# MiB`, llama-model-loader.cpp `file size   = %.2f MiB (%.2f BPW)`, server
# `loading draft model '%s'`), with made-up sizes.
DRAFT_AND_TWO_GPUS = """\
print_info: file size   = 812.50 MiB (4.87 BPW)
llama_context: n_ctx         = 16384
llama_kv_cache:      CUDA0 KV buffer size =  1024.00 MiB
llama_kv_cache:      CUDA1 KV buffer size =   512.00 MiB
srv    load_model: loading draft model '/models/draft-0.5b.gguf'
print_info: file size   = 400.00 MiB (4.50 BPW)
llama_kv_cache:      CUDA0 KV buffer size =   96.00 MiB
main: server is listening on http://127.0.0.1:8080
"""


def test_draft_model_buffers_are_not_the_targets() -> None:
    report = parse_llamacpp_log(DRAFT_AND_TWO_GPUS)
    assert report.draft_model == "/models/draft-0.5b.gguf"
    assert report.kv_buffer_mib == 1536.0
    assert (report.draft_kv_buffer_mib, report.speculative_method) == (96.0, "draft")
    assert report.model_size_gib == round(812.5 / 1024, 4)
    assert report.ctx_size == 16384
    assert report.listen_url == "http://127.0.0.1:8080"


# A built sample, not a recorded log: a newer build's `build_info:` line, then the target's
# context and the context of its MTP head, in the lines llama.cpp PR #22673's own log shows
# for `--spec-type mtp` (`llama_kv_cache: size = ... (8192 cells, 1 layers, ...)`, `set_mtp:
# MTP draft head registered`); the sizes are made up.
MTP_DRAFT = """\
0.00.000.412 I build_info: b484-2c4055912
0.00.186.982 I srv    load_model: loading model '/models/Qwen3.6-27B-Q4_K_M.gguf'
0.00.901.004 I llama_context: n_ctx         = 8192
0.00.903.118 I llama_kv_cache:      CUDA0 KV buffer size =   512.00 MiB
0.00.903.120 I llama_kv_cache: size =  512.00 MiB (  8192 cells,  16 layers,  1/1 seqs), \
K (f16):  256.00 MiB, V (f16):  256.00 MiB
0.01.100.330 I llama_context: n_ctx         = 8192
0.01.100.412 I llama_kv_cache:      CUDA0 KV buffer size =    32.00 MiB
0.01.100.413 I llama_kv_cache: size =   32.00 MiB (  8192 cells,   1 layers,  1/1 seqs), \
K (f16):   16.00 MiB, V (f16):   16.00 MiB
0.01.210.998 I set_mtp: MTP draft head registered (ctx_mtp=0x5cd411b88ae0, n_ubatch=512)
0.01.211.050 I slot   load_model: id  0 | task -1 | speculative decoding context initialized
0.22.641.580 I srv  llama_server: listening on http://127.0.0.1:18138
"""


def test_an_mtp_heads_kv_is_its_own_and_the_build_info_is_the_build() -> None:
    report = parse_llamacpp_log(MTP_DRAFT)
    assert report.build == "484 (2c4055912)"
    assert (report.kv_buffer_mib, report.kv_type_k, report.ctx_size) == (512.0, "f16", 8192)
    assert (report.draft_kv_buffer_mib, report.speculative_method) == (32.0, "mtp")
    assert report.draft_model is None


def test_an_mtp_seat_reports_its_method_and_the_targets_kv() -> None:
    from fleet.engines.llamacpp import read_log

    engine = read_log(MTP_DRAFT)
    assert engine.version == "484 (2c4055912)"
    assert engine.kv_cache_gib == 0.5
    assert engine.speculative is not None and engine.speculative.method == "mtp"


def test_allocation_failure_is_an_error() -> None:
    line = "ggml_backend_cuda_buffer_type_alloc_buffer: allocating 9000.00 MiB on device 0: "
    report = parse_llamacpp_log(line + "cudaMalloc failed: out of memory\n")
    assert report.errors == ((line + "cudaMalloc failed: out of memory").strip(),)


@pytest.mark.parametrize("text", ["", "\n", "nothing here\n"], ids=["empty", "blank", "prose"])
def test_no_facts_is_empty(text: str) -> None:
    assert parse_llamacpp_log(text) == LlamaCppReport()


def test_every_llamacpp_log_in_the_corpus_has_a_case() -> None:
    assert {path.name for path in LOGS.iterdir()} == COVERED


# The corpus log's KV lines (135.00 MiB on CUDA0, K and V f16) in the formats of older
# builds, by the source's format strings: `%s: %10s KV buffer size = %8.2f MiB` and
# `%s: KV self size  = %7.2f MiB, K (%s): %7.2f MiB, V (%s): %7.2f MiB` (to b5400, from
# llama_new_context_with_model / llama_init_from_model / llama_context /
# llama_kv_cache_unified), `%s: VRAM kv self = %.2f MB` and `%s: kv self size  = %7.2f MB`
# (2023). Each must give the facts of the plain (corpus) form, with `kv_on_cpu` as given.
SELF_SIZE = "KV self size  =  135.00 MiB, K (f16):   67.50 MiB, V (f16):   67.50 MiB"
OLD_KV = [
    (
        "2024-llama_new_context_with_model",
        [
            "llama_kv_cache_init:      CUDA0 KV buffer size =   135.00 MiB",
            "llama_new_context_with_model: " + SELF_SIZE,
        ],
        {"kv_on_cpu": False},
    ),
    (
        "2025-llama_kv_cache_unified",
        [
            "llama_kv_cache_unified:      CUDA0 KV buffer size =   135.00 MiB",
            "llama_kv_cache_unified: " + SELF_SIZE,
        ],
        {"kv_on_cpu": False},
    ),
    (
        "timestamped-init-llama_context",
        [
            "0.01.453.931 I init:      CUDA0 KV buffer size =   135.00 MiB",
            "0.01.453.945 I llama_context: " + SELF_SIZE,
        ],
        {"kv_on_cpu": False},
    ),
    (
        "cpu-kv-buffer",
        [
            "llama_kv_cache_init:        CPU KV buffer size =   135.00 MiB",
            "llama_new_context_with_model: " + SELF_SIZE,
        ],
        {"kv_on_cpu": True},
    ),
    (
        "cpu-kv-buffer-modern",
        [
            "llama_kv_cache:        CPU KV buffer size =   135.00 MiB",
            samples.MODERN_KV_SIZE,
        ],
        {"kv_on_cpu": True},
    ),
    (
        "gpu-and-cpu-kv-buffers",
        [
            "llama_kv_cache:      CUDA0 KV buffer size =   100.00 MiB",
            "llama_kv_cache:        CPU KV buffer size =    35.00 MiB",
            samples.MODERN_KV_SIZE,
        ],
        {"kv_on_cpu": False},
    ),
    (
        "2023-vram-kv-self",
        [
            "llama_kv_cache_init: VRAM kv self = 135.00 MB",
            "llama_new_context_with_model: " + SELF_SIZE,
        ],
        {"kv_on_cpu": False},
    ),
    (
        "2023-kv-self-size-only",
        ["llama_new_context_with_model: kv self size  =  135.00 MB"],
        {"kv_on_cpu": None, "kv_type_k": None, "kv_type_v": None},
    ),
    (
        "q8_0-cache-types",
        [
            "llama_kv_cache_init:      CUDA0 KV buffer size =   135.00 MiB",
            "llama_new_context_with_model: "
            + SELF_SIZE.replace("K (f16)", "K (q8_0)").replace("V (f16)", "V (q8_0)"),
        ],
        {"kv_on_cpu": False, "kv_type_k": "q8_0", "kv_type_v": "q8_0"},
    ),
]


@pytest.mark.parametrize(
    ("lines", "differences"), [case[1:] for case in OLD_KV], ids=[case[0] for case in OLD_KV]
)
def test_older_kv_formats_give_the_same_facts(
    lines: list[str], differences: dict[str, object]
) -> None:
    plain = parse_llamacpp_log(samples.LLAMA_LOG.read_text())
    report = parse_llamacpp_log(samples.old_kv_lines(*lines))
    # Only the modern size line counts the cells (`(  6912 cells, ...)`).
    cells = 6912 if samples.MODERN_KV_SIZE in lines else None
    assert report == plain.model_copy(update={"kv_cells": cells, **differences})
    assert report.kv_buffer_mib == 135.0


def test_brief_example_line() -> None:
    report = parse_llamacpp_log(
        "llama_kv_cache_init:      CUDA0 KV buffer size =   256.00 MiB\n"
        "llama_new_context_with_model: KV self size  =  256.00 MiB, "
        "K (f16):  128.00 MiB, V (f16):  128.00 MiB\n"
    )
    assert (report.kv_buffer_mib, report.kv_type_k, report.kv_type_v) == (256.0, "f16", "f16")
    assert report.kv_on_cpu is False


def test_recurrent_cache_of_older_builds_is_its_state() -> None:
    """b5400's `llama_kv_cache_recurrent` (Mamba, RWKV) logs its state as a KV cache."""
    report = parse_llamacpp_log(
        "llama_kv_cache_recurrent:      CUDA0 KV buffer size =    15.50 MiB\n"
        "llama_kv_cache_recurrent: KV self size  =   15.50 MiB, K (f32):    3.50 MiB, "
        "V (f32):   12.00 MiB\n"
    )
    assert report.recurrent_state_mib == 15.5
    assert (report.kv_buffer_mib, report.kv_type_k, report.kv_on_cpu) == (None, None, None)


def test_a_llama_server_seat_whose_log_shows_an_mtp_head_drafts_with_mtp() -> None:
    """`--spec-type draft-mtp` is no draft model on the argv: the log names the method."""
    from fleet.engines.llamacpp import read_log
    from fleet.facts.instance import Instance
    from fleet.observed.assemble import observed_seat

    argv = ("llama-server", "-m", "/models/q.gguf", "--spec-type", "draft-mtp", "-c", "8192")
    container = Instance(
        id="c" * 64, name="mtp", state="running", image="llama", image_id="sha256:", argv=argv
    )
    seat = observed_seat(container, engine=read_log(MTP_DRAFT), gpus=(0,), vram_mib=1)
    assert seat.speculative == {"method": "mtp"}
    plain = observed_seat(container, engine=read_log(""), gpus=(0,), vram_mib=1)
    assert plain.speculative is None


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("b11434_cpu_tiny-llama-4l_verbosity3_np2.log", (None, None, None, None)),
        ("b11434_cpu_tiny-llama-4l_lv4_np2.log", ("11434 (b11434)", 4096, 2.0, None)),
        (
            "b11434_cpu_tiny-llama-4l_lv4_np2_draft-simple.log",
            (
                "11434 (b11434)",
                4096,
                2.0,
                SpeculativeFact(method="draft", num_tokens=4, draft_model=TINY_DRAFT),
            ),
        ),
    ],
    ids=["verbosity3", "lv4", "lv4-draft"],
)
def test_the_engine_report_of_the_real_b11434(name: str, expected: tuple[object, ...]) -> None:
    report = engine_for("llama.cpp").read_log((LOGS / name).read_text())
    assert (
        report.version,
        report.kv_cache_tokens,
        report.max_concurrency,
        report.speculative,
    ) == expected
    assert report.max_model_len == 2048


def test_bench_reads_the_real_spec_decode_counters(corpus: Path) -> None:
    name = "b11434_cpu_tiny-llama-4l_np2_draft-simple_after-one-request.metrics.txt"
    text = (corpus / "llamacpp-metrics" / name).read_text()
    seat = drafted_seat("ghcr.io/ggml-org/llama.cpp:server-b11434")
    counts = engine_for("llama.cpp").speculative_counts(sum_samples(text), seat)
    assert counts == {"accepted": 0.0, "draft_tokens": 82.0, "drafts": 22.0}
