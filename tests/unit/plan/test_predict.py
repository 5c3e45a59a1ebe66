"""Predictions beside each seat action: the figures, where they came from, the JSON, the text."""

from __future__ import annotations

import pytest

from fleet.engines.vllm.log import EngineReport
from fleet.observed.models import Observation, ObservedHost
from fleet.plan.actions import ActionKind
from fleet.plan.fit import predict_seat
from fleet.plan.plan import make_plan
from fleet.report.plan_text import plan_lines, plan_markdown
from tests.unit.plan.fakes import in_sync
from tests.unit.plan.models import with_models
from tests.unit.render.test_compose import example

GIB = 1024**3


def first_plan(parsed: bool = True) -> Observation:
    """The example fleet's hosts before the first apply: models on disk, no seat running."""
    observed = with_models(in_sync(example()), parsed=parsed)
    hosts = {
        name: host.model_copy(
            update={
                "seats": (),
                "gpus": tuple(g.model_copy(update={"memory_used_mib": 0}) for g in host.gpus),
            }
        )
        for name, host in observed.hosts.items()
    }
    return observed.model_copy(update={"hosts": hosts})


# (seat, KV budget per GPU, KV tokens vLLM would log, tokens / context); from config.json
# as vLLM lays the KV cache out (see tests/unit/facts/test_kv_estimate.py for the kinds).
ESTIMATES = [
    # GQA, a utilization fraction: 0.9 x 24,576 MiB - 14.96 GiB weights - overhead
    ("llama8b", 6093 * 2**20, 48_736, 1.4873),
    # GQA + its MTP layer (49 layers of 4 KV heads x 128): 10 GiB / 100,352 B a token
    ("flash", 10 * GIB, 106_992, 1.6326),
    # tensor parallel 2: 4 of 8 KV heads per GPU
    ("reason", 11 * GIB, 90_112, 2.2),
    # hybrid linear attention with MTP, k=3: 106 blocks of 800 tokens per group
    ("sec", 22 * GIB, 84_800, 0.3235),
    # 10 full + 52 sliding-window layers in 7 groups of 10
    ("char-rp", 24641 * 2**20, 45_056, 0.3438),
    ("embed", 256 * 2**20, 16_384, 16.0),
]


@pytest.mark.parametrize(
    ("seat", "budget", "tokens", "concurrency"), ESTIMATES, ids=[e[0] for e in ESTIMATES]
)
def test_estimates_from_config_json(
    seat: str, budget: int, tokens: int, concurrency: float
) -> None:
    fleet = example()
    prediction = predict_seat(fleet, first_plan(), fleet.seats[seat])
    assert (prediction.kv_cache_bytes, prediction.kv_tokens) == (budget, tokens)
    assert (prediction.concurrency, prediction.source) == (concurrency, "estimate")


def test_only_a_summary_of_config_json_estimates_uniform_models_and_says_so() -> None:
    fleet = example()
    observed = first_plan(parsed=False)
    flash = predict_seat(fleet, observed, fleet.seats["flash"])
    assert (flash.kv_tokens, flash.source, flash.unknown) == (109_216, "estimate", ())
    sec = predict_seat(fleet, observed, fleet.seats["sec"])
    assert (sec.kv_tokens, sec.source) == (None, None)
    assert sec.unknown == (
        "cannot estimate KV of hybrid-linear attention from the config summary observed",
    )


def _logged(observed: Observation, seat: str, report: EngineReport) -> Observation:
    tower = observed.hosts["tower"]
    seats = tuple(
        s.model_copy(update={"engine": report}) if s.name == seat else s for s in tower.seats
    )
    observed.hosts["tower"] = tower.model_copy(update={"seats": seats})
    return observed


EXACT = [
    ("same-configuration", "context: 65536", "context: 32768", "exact", 98_301),
    ("other-budget", "kv_cache_bytes: 10GiB", "kv_cache_bytes: 8GiB", "estimate", 85_584),
]


@pytest.mark.parametrize(
    ("old", "new", "source", "tokens"), [e[1:] for e in EXACT], ids=[e[0] for e in EXACT]
)
def test_a_log_of_the_same_configuration_is_reused(
    old: str, new: str, source: str, tokens: int
) -> None:
    """flash's log reserved 10 GiB and fit 98,301 tokens: a new context keeps that figure."""
    report = EngineReport(kv_cache_gib=10.0, kv_cache_tokens=98_301, weights_gib=17.0)
    observed = _logged(with_models(in_sync(example()), parsed=True), "flash", report)
    plan = make_plan(example({"seats/flash.yaml": (old, new)}), observed)
    (action,) = [a for a in plan.actions if a.target == "flash" and "seat" in a.kind.value]
    assert action.prediction is not None
    assert (action.prediction.source, action.prediction.kv_tokens) == (source, tokens)


def test_plan_json_carries_the_prediction_per_seat_action() -> None:
    plan = make_plan(example(), first_plan())
    data = plan.model_dump(mode="json")
    flash = next(a for a in data["actions"] if a["target"] == "flash")
    prediction = flash["prediction"]
    assert {"kv_tokens", "concurrency", "source", "gpu_memory"} <= set(prediction)
    assert (prediction["kv_tokens"], prediction["source"]) == (106_992, "estimate")
    # GPU 2 holds flash and one of reason's two tensor-parallel halves
    assert prediction["gpu_memory"] == {"2": {"used_mib": 72192, "total_mib": 97887}}
    assert all(a["prediction"] is None for a in data["actions"] if a["wave"] != 1)
    assert type(plan).model_validate(data) == plan  # a saved plan loads back


def test_plan_text_and_markdown_show_the_prediction_beside_the_action() -> None:
    fleet = example({"seats/flash.yaml": ("context: 65536", "context: 32768")})
    plan = make_plan(fleet, with_models(in_sync(example()), parsed=True))
    lines = [text for _, text in plan_lines(plan)]
    start = lines.index("  ~ seat flash on tower")
    assert lines[start + 1 : start + 4] == [
        "      ~ context: 65536 -> 32768",
        "      = KV 10GiB -> ~107,000 tokens, max concurrency 3.27x at 32,768 (band 1.2x..2.5x), "
        "estimate",
        "      = GPU 2: 54,272 of 97,887 MiB with every seat on it",
    ]
    assert "context changes; KV 10GiB -> ~107,000 tokens, max concurrency 3.27x" in plan_markdown(
        plan
    )


def test_a_hybrid_models_maximum_concurrency_is_what_the_line_and_the_band_judge() -> None:
    """sec: 424 blocks over the 340 one 262,144-token request takes (328 of its context,
    three state groups of one block plus three speculative ones); tokens / context is 0.32."""
    fleet = example()
    prediction = predict_seat(fleet, first_plan(), fleet.seats["sec"])
    assert prediction.max_concurrency == round(424 / 340, 4)
    assert prediction.band_concurrency == prediction.max_concurrency
    assert prediction.describe() == (
        "KV 22GiB -> ~84,800 tokens, max concurrency 1.25x at 262,144 (band 1.2x..2.5x), estimate"
    )
    data = prediction.model_dump(mode="json")
    assert (data["kv_tokens"], data["max_concurrency"], data["context"]) == (
        84_800,
        1.2471,
        262_144,
    )


UNKNOWN = [
    (
        "host-down",
        lambda o: {**o.hosts, "tower": ObservedHost(name="tower", reachable=False, error="x")},
        ("host tower is not observed",),
    ),
    (
        "model-missing",
        lambda o: {
            **o.hosts,
            "tower": o.hosts["tower"].model_copy(
                update={"models": {}, "missing_paths": ("/models/Qwen3-30B-A3B-NVFP4",)}
            ),
        },
        ("model /models/Qwen3-30B-A3B-NVFP4 is not on tower",),
    ),
]


@pytest.mark.parametrize(
    ("hosts", "unknown"), [u[1:] for u in UNKNOWN], ids=[u[0] for u in UNKNOWN]
)
def test_a_fact_that_cannot_be_read_is_said_not_guessed(
    hosts: object, unknown: tuple[str, ...]
) -> None:
    fleet = example()
    observed = first_plan()
    observed = observed.model_copy(update={"hosts": hosts(observed)})  # type: ignore[operator]
    prediction = predict_seat(fleet, observed, fleet.seats["flash"])
    assert (prediction.kv_tokens, prediction.source, prediction.unknown) == (None, None, unknown)
    plan = make_plan(fleet, observed)
    assert any(a.kind is ActionKind.CREATE_SEAT and a.target == "flash" for a in plan.actions)
    assert not any("KV" in b.message for b in plan.blockers if b.target == "flash")


def test_a_hand_made_container_a_seat_adopts_is_counted_once() -> None:
    """char-rp runs by hand (fleet will adopt it): GPU 1 holds it once, as char-rp's share."""
    fleet = example()
    observed = in_sync(fleet)
    tower = observed.hosts["tower"]
    by_hand = [
        s.model_copy(
            update={
                "managed": False,
                "name": "char-rp-by-hand",
                "vram_mib": 78_000,
                "instance": s.instance.model_copy(
                    update={"labels": {"com.docker.compose.service": "char-rp"}}
                ),
            }
        )
        if s.name == "char-rp"
        else s
        for s in tower.seats
    ]
    observed.hosts["tower"] = tower.model_copy(update={"seats": tuple(by_hand)})
    assert observed.hosts["tower"].adoptable("char-rp") is not None
    prediction = predict_seat(fleet, observed, fleet.seats["embed"])
    # char-rp's 0.8 share of 97,887 MiB, and embed and rerank at 15 GiB (the fake's
    # logged weights) + 256 MiB + 1 GiB each; no second char-rp
    assert prediction.gpu_memory[1].used_mib == 78_309 + 2 * (15 * 1024 + 256 + 1024)


CPU_CODER = (
    "gpus: [0]\nengine: vllm\nimage: vllm/vllm-openai:v0.18.0\nmodel: /models/TinyLlama-1.1B-"
    "Chat-FP8\nserved_name: coder\ncontext: 2048\ngpu_memory_utilization: 0.02",
    "gpus: []\nengine: vllm\nimage: vllm/vllm-openai:v0.18.0\nmodel: /models/TinyLlama-1.1B-"
    "Chat-FP8\nserved_name: coder\ncontext: 2048\nkv_cache_bytes: 256MiB",
)


@pytest.mark.parametrize(
    ("memory_mib", "unknown"),
    [(64000, ()), (None, ("memory of tower is not known (/proc/meminfo not read)",))],
    ids=["meminfo-read", "meminfo-unread"],
)
def test_a_vllm_seat_on_the_cpu_is_predicted_from_its_budget_and_the_hosts_memory(
    memory_mib: int | None, unknown: tuple[str, ...]
) -> None:
    fleet = example({"seats/coder.yaml": CPU_CODER})
    observed = first_plan()
    tower = observed.hosts["tower"].model_copy(update={"memory_total_mib": memory_mib})
    observed = observed.model_copy(update={"hosts": {**observed.hosts, "tower": tower}})
    prediction = predict_seat(fleet, observed, fleet.seats["coder"])
    # 22 layers x 4 KV heads x 64 x 2 (K, V) x 2 bytes a token, one rank: 256 MiB / 22,528 B
    assert (prediction.kv_tokens, prediction.concurrency) == (11_904, 5.8125)
    assert (prediction.gpu_memory, prediction.unknown) == ({}, unknown)
    lines = [text for _, text in plan_lines(make_plan(fleet, observed))]
    assert any(
        ln.endswith(
            "CPU: /models/TinyLlama-1.1B-Chat-FP8 as coder, context 2,048, KV "
            "256MiB, port 8030, vllm/vllm-openai:v0.18.0"
        )
        for ln in lines
    ), lines
    ram = [ln.strip() for ln in lines if ln.strip().startswith("= RAM of tower")]
    # what the RAM blocker counts: the model on disk, the KV budget, the engine's overhead
    assert ram == [
        "= RAM of tower: model 1,075 MiB + KV 256 MiB + engine ~2,816 MiB = ~4,147 MiB, "
        "estimate from the model's size"
    ]


def test_a_cpu_build_seat_names_the_defaults_its_estimate_assumes() -> None:
    """vLLM's CPU release image lays the cache out in blocks of 128 tokens: the plan line of
    the estimate says so."""
    image = "public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo:v0.32.0"
    cpu_build = CPU_CODER[1].replace("vllm/vllm-openai:v0.18.0", image)
    fleet = example({"seats/coder.yaml": (CPU_CODER[0], cpu_build)})
    observed = first_plan()
    tower = observed.hosts["tower"].model_copy(update={"memory_total_mib": 64000})
    observed = observed.model_copy(update={"hosts": {**observed.hosts, "tower": tower}})
    prediction = predict_seat(fleet, observed, fleet.seats["coder"])
    # 256 MiB / (128 tokens x 22,528 B) = 93 blocks, 16 a request of 2,048: 5.8125x
    assert (prediction.kv_tokens, prediction.max_concurrency) == (11_904, 5.8125)
    assert prediction.assumptions == ("block 128 (CPU)",)
    assert prediction.describe().endswith("estimate (block 128 (CPU))")
    lines = [text for _, text in plan_lines(make_plan(fleet, observed))]
    assert any(ln.endswith("estimate (block 128 (CPU))") for ln in lines), lines
