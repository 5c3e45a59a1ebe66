"""SGLang as a third engine in the pure core: argv, log, metrics, rules, import, plan.

The live argv is written by hand as an operator starts SGLang, and the log lines are
SGLang 0.5.23's format strings filled in (tests/corpus/sglang-logs/SOURCES.md names the
source line of each), so nothing here compares fleet's renderer or parser with itself.
"""

from __future__ import annotations

import pytest

from fleet.engines import engine_for, engine_load, explain_log, read_process
from fleet.engines.report import ErrorKind
from fleet.observed.bench import oom_line
from fleet.plan.plan import make_plan
from fleet.runtimes import validate_fleet
from fleet.runtimes.compose import render_service
from fleet.spec.load import load_fleet
from fleet.spec.models import DesiredFleet, Seat
from fleet.spec.problems import Severity
from tests.unit.plan.fakes import in_sync
from tests.unit.render.test_compose import DESIRED

SEAT = """# Llama 8B under SGLang on rig's second card.
host: rig
gpus: [1]
engine: sglang
image: lmsysorg/sglang:v0.5.23
model: /models/Llama-3.1-8B-Instruct
served_name: sgl
context: 16384
gpu_memory_utilization: 0.8
port: 8061
"""
LIVE = [  # how an operator starts it, flags in their own order
    "python3",
    "-m",
    "sglang.launch_server",
    "--tp-size",
    "1",
    "--model-path",
    "/models/Llama-3.1-8B-Instruct",
    "--port=8061",
    "--host",
    "0.0.0.0",
    "--served-model-name",
    "sgl",
    "--mem-fraction-static",
    "0.8",
    "--context-length",
    "16384",
    "--enable-metrics",
]
LOG = "\n".join(
    [
        "[2026-12-01 10:00:01] server_args={'model_path': '/models/Llama-3.1-8B-Instruct', "
        "'served_model_name': 'sgl', 'tp_size': 1, 'context_length': 16384, "
        "'speculative_algorithm': None}",
        "[2026-12-01 10:00:03 TP0] Load weight end. elapsed=2.31 s, type=LlamaForCausalLM, "
        "avail mem=7.92 GB, mem usage=14.96 GB.",
        "[2026-12-01 10:00:04 TP0] KV Cache is allocated. dtype: torch.bfloat16, "
        "#tokens: 29061, K size: 1.77 GB, V size: 1.77 GB",
        "[2026-12-01 10:00:05 TP0] max_total_num_tokens=29061, chunked_prefill_size=8192, "
        "max_prefill_tokens=16384, max_running_requests=64, context_len=16384, "
        "available_gpu_mem=4.31 GB",
        "INFO:     Uvicorn running on http://0.0.0.0:8061 (Press CTRL+C to quit)",
        "[2026-12-01 10:00:09] The server is fired up and ready to roll!",
    ]
)


def fleet_with(seat_yaml: str = SEAT) -> tuple[DesiredFleet | None, list[str]]:
    files = {p.relative_to(DESIRED).as_posix(): p.read_text() for p in DESIRED.rglob("*.yaml")}
    del files["seats/llama8b-sgl.yaml"]  # the example's SGLang seat: this one takes its GPU
    files["seats/sgl.yaml"] = seat_yaml
    loaded = load_fleet(files)
    problems = validate_fleet(loaded)
    return loaded.fleet, [str(p) for p in problems if p.severity is Severity.ERROR]


def seat() -> tuple[DesiredFleet, Seat]:
    fleet, errors = fleet_with()
    assert errors == [] and fleet is not None
    return fleet, fleet.seats["sgl"]


def test_the_rendered_argv_and_a_hand_written_one_read_back_the_same() -> None:
    fleet, desired = seat()
    service = render_service(desired, fleet.hosts["rig"])
    rendered, engine = read_process([*service["entrypoint"], *service["command"]])
    live, live_engine = read_process(LIVE)
    assert engine is live_engine is engine_for("sglang")
    assert rendered.program == ("python3", "-m", "sglang.launch_server")
    assert (live.model, live.port, live.max_model_len) == (desired.model, 8061, 16384)
    assert (live.gpu_memory_utilization, live.tensor_parallel_size) == (0.8, 1)
    assert engine.observed_shape(live) == engine.desired_shape(desired)
    assert engine.observed_shape(rendered) == engine.desired_shape(desired)
    assert service["healthcheck"]["test"][-1].endswith(":8061/health')")


def test_speculative_flags_read_into_one_setting() -> None:
    argv = [*LIVE, "--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3"]
    argv += ["--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]
    argv += ["--speculative-draft-model-path", "/models/eagle-draft"]
    args, engine = read_process(argv)
    assert engine is not None
    assert engine.observed_shape(args)["speculative"] == {
        "method": "EAGLE",
        "num_speculative_tokens": 3,
        "model": "/models/eagle-draft",
    }
    assert args.extra == ("--enable-metrics",)


def test_the_startup_log_gives_kv_tokens_context_and_weights() -> None:
    report = engine_for("sglang").read_log(LOG)
    assert (report.kv_cache_tokens, report.max_model_len) == (29061, 16384)
    assert (report.weights_gib, report.kv_cache_gib) == (14.96, 3.54)
    assert (report.served_names, report.kv_cache_dtype) == (("sgl",), "bfloat16")
    assert report.errors == ()
    engine, data, _ = explain_log(LOG)
    assert engine.NAME == "sglang" and data["kv_cache_tokens"] == 29061


def test_an_older_log_with_a_serverargs_repr_and_no_dtype() -> None:
    old = (
        "[2026-02-26 05:19:58] server_args=ServerArgs(model_path='zai-org/GLM-5-FP8', "
        "tp_size=8, served_model_name='glm', context_length=None)\n"
        "[2026-02-26 05:21:13 TP0] KV Cache is allocated. #tokens: 524288, KV size: 17.16 GB\n"
        "[2026-02-26 05:21:14 TP0] max_total_num_tokens=524288, chunked_prefill_size=16384, "
        "max_prefill_tokens=16384, max_running_requests=1024, context_len=202752, "
        "available_gpu_mem=20.00 GB\n"
    )
    report = engine_for("sglang").read_log(old)
    assert (report.model, report.tensor_parallel_size, report.served_names) == (
        "zai-org/GLM-5-FP8",
        8,
        ("glm",),
    )
    assert (report.kv_cache_tokens, report.kv_cache_gib, report.max_model_len) == (
        524288,
        17.16,
        202752,
    )


FAILURES = [
    (
        "no-kv-memory",
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
        ErrorKind.NO_KV_MEMORY,
    ),
    (
        "context-too-long",
        "ValueError: Warning: User-specified context_length (200000) is greater than the "
        "derived context_length (131072). This may lead to incorrect model outputs.",
        ErrorKind.MAX_MODEL_LEN_TOO_LONG,
    ),
    (
        "cuda-oom",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate",
        ErrorKind.CUDA_OOM,
    ),
]


@pytest.mark.parametrize(("line", "kind"), [f[1:] for f in FAILURES], ids=[f[0] for f in FAILURES])
def test_startup_failures_are_recognised(line: str, kind: ErrorKind) -> None:
    text = "[2026-12-01 10:00:01] server_args={'model_path': '/m'}\nTraceback:\n" + line + "\n"
    report = engine_for("sglang").read_log(text)
    assert [(e.kind, e.message) for e in report.errors] == [(kind, line)]
    if kind is ErrorKind.MAX_MODEL_LEN_TOO_LONG:
        assert (report.requested_max_model_len, report.derived_max_model_len) == (200000, 131072)


def test_metrics_drain_and_bench_read_sglangs_own_names() -> None:
    labels = 'model_name="sgl",engine_type="unified",tp_rank="0",pp_rank="0",moe_ep_rank="0"'
    tokens = 'model_name="sgl",engine_type="unified",is_streaming="true"'
    text = (
        f"sglang:num_running_reqs{{{labels}}} 2.0\n"
        f"sglang:num_queue_reqs{{{labels}}} 1.0\n"
        f"sglang:gen_throughput{{{labels}}} 84.5\n"
        f"sglang:generation_tokens_total{{{tokens}}} 260.0\n"
        'sglang:spec_verify_calls_total{model_name="sgl"} 100.0\n'
    )
    load = engine_load(text)
    assert (load.running, load.waiting, load.generated) == (2.0, 1.0, 260.0)
    fleet, errors = fleet_with(SEAT + "speculative: {method: NEXTN, num_tokens: 3}\n")
    assert errors == [] and fleet is not None
    engine, sgl = engine_for("sglang"), fleet.seats["sgl"]
    counts = engine.speculative_counts(
        {"sglang:generation_tokens_total": 260.0, engine.VERIFY_CALLS: 100.0}, sgl
    )  # type: ignore[attr-defined]
    assert counts == {"accepted": 160.0, "draft_tokens": 300.0, "drafts": 100.0}
    assert oom_line(["ok", "torch.OutOfMemoryError: CUDA out of memory"], engine.OOM_SIGNATURES)


RULES = [
    ("fine", SEAT, []),
    (
        "byte-budget",
        SEAT.replace("gpu_memory_utilization: 0.8", "kv_cache_bytes: 4GiB"),
        ["seats/sgl.yaml:9: error: SGLang takes no KV byte budget"],
    ),
    (
        "no-budget",
        SEAT.replace("gpu_memory_utilization: 0.8\n", ""),
        ["seats/sgl.yaml:1: error: an SGLang seat needs gpu_memory_utilization"],
    ),
    (
        "on-the-cpu",
        SEAT.replace("gpus: [1]", "gpus: []"),
        ["seats/sgl.yaml:3: error: an sglang seat needs at least one GPU"],
    ),
    (
        "unknown-algorithm",
        SEAT + "speculative: {method: mtp, num_tokens: 3}\n",
        ["seats/sgl.yaml:11: error: unknown SGLang speculative algorithm 'mtp'"],
    ),
    (
        "eagle-without-drafter",
        SEAT + "speculative: {method: EAGLE, num_tokens: 3}\n",
        ["seats/sgl.yaml:11: error: EAGLE drafts with a separate model: set draft_model"],
    ),
    (
        "tp-flag",
        SEAT + "extra_args: [--tp-size, '2']\n",
        ["seats/sgl.yaml:11: error: --tp-size is implied by gpus"],
    ),
]


@pytest.mark.parametrize(("text", "wanted"), [r[1:] for r in RULES], ids=[r[0] for r in RULES])
def test_sglang_seat_rules(text: str, wanted: list[str]) -> None:
    _, errors = fleet_with(text)
    assert len(errors) == len(wanted), errors
    for error, start in zip(errors, wanted, strict=True):
        assert start in error


def test_an_in_sync_sglang_seat_plans_nothing_and_a_changed_fraction_replaces_it() -> None:
    fleet, _ = seat()
    plan = make_plan(fleet, in_sync(fleet, {"sgl": LIVE}))
    assert [a for a in plan.actions if a.target == "sgl"] == []
    assert any(n.target == "sgl" and n.reason.startswith("in sync") for n in plan.noops)
    changed, errors = fleet_with(SEAT.replace("0.8", "0.7"))
    assert errors == [] and changed is not None
    replan = make_plan(changed, in_sync(fleet, {"sgl": LIVE}))
    (action,) = [a for a in replan.actions if a.target == "sgl"]
    assert [(c.field, c.old, c.new) for c in action.changes] == [
        ("gpu_memory_utilization", 0.8, 0.7)
    ]


def test_import_reads_the_fraction_and_the_algorithm_off_the_live_argv() -> None:
    argv = [*LIVE, "--speculative-algorithm", "NEXTN", "--speculative-num-steps", "2"]
    args, engine = read_process(argv)
    assert engine is not None
    assert engine.import_lines(args) == [
        ("gpu_memory_utilization", 0.8, "--mem-fraction-static"),
        (
            "speculative",
            {"method": "NEXTN", "num_tokens": 2},
            "--speculative-algorithm / --speculative-num-steps",
        ),
    ]
    assert engine.DEFAULT_PORT == 30000
