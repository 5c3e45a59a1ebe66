"""A llama.cpp seat end to end in the pure core: render, observe, diff, health, validate.

Each case is one point of the bug where an in-sync llama.cpp seat never converged: the
compared shape held only vLLM fields, no KV sizing was rendered, observation never read
the llama-server log, and the engine was guessed from the program's name.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fleet.engines import engine_for, read_process
from fleet.observed.assemble import assemble_host
from fleet.plan.health import Endpoints, HealthState, judge_seat
from fleet.plan.plan import make_plan
from fleet.runtimes import validate_fleet
from fleet.runtimes.compose import COMPOSE, render_service
from fleet.spec.models import DesiredFleet, Seat
from fleet.spec.problems import Severity
from tests.unit.observe.test_assemble import container
from tests.unit.plan.fakes import in_sync, live_seat
from tests.unit.render.test_compose import DESIRED

LLAMA_LOG = "b-ebbf544_cuda-rtx4060ti_qwen3.5-35b-a3b-iq2m_hybrid-kv-recurrent_nparallel-auto4.log"
CODER = """# A GGUF coder on llama-server, two slots of 8k.
host: rig
gpus: [1]
engine: llama.cpp
image: ghcr.io/ggml-org/llama.cpp:server-b6100
model: /models/coder-27b.gguf
served_name: gguf-coder
context: 8192
parallel: 2
port: 8060
"""


def fleet_with(seat_yaml: str = CODER) -> tuple[DesiredFleet, list[str]]:
    from fleet.spec.load import load_fleet

    files = {p.relative_to(DESIRED).as_posix(): p.read_text() for p in DESIRED.rglob("*.yaml")}
    files["seats/gguf-coder.yaml"] = seat_yaml
    loaded = load_fleet(files)
    problems = validate_fleet(loaded)
    assert loaded.fleet is not None, loaded.problems
    return loaded.fleet, [str(p) for p in problems if p.severity is Severity.ERROR]


def errors_with(seat_yaml: str) -> list[str]:
    """The errors of the example fleet with this seat file, whether it loads or not (a key
    of another engine's is an error where it is written, and the seat does not load)."""
    from fleet.spec.load import load_fleet

    files = {p.relative_to(DESIRED).as_posix(): p.read_text() for p in DESIRED.rglob("*.yaml")}
    files["seats/gguf-coder.yaml"] = seat_yaml
    problems = validate_fleet(load_fleet(files))
    return [str(p) for p in problems if p.severity is Severity.ERROR]


def coder() -> tuple[DesiredFleet, Seat]:
    fleet, errors = fleet_with()
    assert errors == []
    return fleet, fleet.seats["gguf-coder"]


def test_render_sizes_the_kv_cache_by_context_and_slots() -> None:
    fleet, seat = coder()
    service = render_service(seat, fleet.hosts["rig"])
    argv = service["entrypoint"] + service["command"]
    assert argv[0] == "/app/llama-server"
    assert argv[argv.index("--ctx-size") + 1] == "16384"  # 8,192 per slot x 2 slots
    assert argv[argv.index("--parallel") + 1] == "2"
    assert argv[argv.index("--alias") + 1] == "gguf-coder"
    assert not any(a.startswith(("--kv-cache", "--gpu-memory", "--max-model")) for a in argv)
    assert service["healthcheck"]["test"][:2] == ["CMD", "curl"]  # the image has no python3


def test_in_sync_llamacpp_seat_plans_nothing() -> None:
    fleet, _ = coder()
    plan = make_plan(fleet, in_sync(fleet))
    assert [a for a in plan.actions if a.target == "gguf-coder"] == []
    assert any(n.target == "gguf-coder" and n.reason.startswith("in sync") for n in plan.noops)


def test_changed_slots_plan_a_replace_naming_the_field() -> None:
    fleet, seat = coder()
    observation = in_sync(fleet)
    live = live_seat(fleet, seat, parallel="4", ctx_size="32768")
    rig = observation.hosts["rig"]
    seats = tuple(live if s.name == "gguf-coder" else s for s in rig.seats)
    observation.hosts["rig"] = rig.model_copy(update={"seats": seats})
    plan = make_plan(fleet, observation)
    (action,) = [a for a in plan.actions if a.target == "gguf-coder"]
    assert [(c.field, c.old, c.new) for c in action.changes] == [("parallel", 4, 2)]


def llama_host_output(corpus: Path, argv: list[str]) -> str:
    labels = {"fleet.managed": "true", "fleet.seat": "gguf-coder", "fleet.spec-hash": "abc"}
    inspect = [container("d" * 64, "fleet-rig-gguf-coder-1", 4300, labels, argv)]
    return "\n".join(
        [
            "@@FLEET gpus-rc 0",
            "@@FLEET docker-rc 0",
            "@@FLEET inspect",
            json.dumps(inspect),
            f"@@FLEET logs {'d' * 64}",
            (corpus / "llamacpp-logs" / LLAMA_LOG).read_text(),
            "@@FLEET end",
        ]
    )


def test_observation_reads_the_llama_server_log(corpus: Path) -> None:
    argv = ["/app/llama-server", "-m", "/models/q.gguf", "-c", "6912", "-np", "4"]
    (seat,) = assemble_host("rig", llama_host_output(corpus, argv), COMPOSE).seats
    assert seat.engine_name == "llama.cpp"
    assert seat.engine is not None
    assert seat.engine.kv_cache_tokens == 6912  # llama_kv_cache: 6912 cells
    assert seat.engine.kv_cache_gib == pytest.approx(135 / 1024, abs=1e-4)
    assert seat.max_model_len == 1728 and seat.parallel_slots == 4  # -c 6912 over 4 slots


@pytest.mark.parametrize(
    ("argv", "engine"),
    [
        (["/opt/llama-tools/bin/vllm", "serve", "/models/m"], "vllm"),
        (["sh", "-c", "exec llama-server -m /models/m.gguf -c 4096"], "llama.cpp"),
        (["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m"], "vllm"),
        (["litellm", "--config", "/etc/litellm/config.yaml"], None),
    ],
    ids=["vllm-under-a-llama-path", "llama-server-via-shell", "vllm-module", "not-an-engine"],
)
def test_engine_is_what_the_process_runs(argv: list[str], engine: str | None) -> None:
    _, found = read_process(argv)
    assert (found.NAME if found else None) == engine


def test_health_gate_passes_a_ready_llamacpp_seat() -> None:
    fleet, seat = coder()
    live = live_seat(fleet, seat)
    engine = engine_for("llama.cpp")
    report = engine.read_log("llama_context: n_ctx = 16384\nnew slot, n_ctx_slot = 8192\n")
    live = live.model_copy(update={"engine": report})
    ready = Endpoints(health_status=200, served_models=("gguf-coder",))
    band = seat.band(fleet.settings.concurrency_band)
    verdict = judge_seat(seat, fleet.hosts["rig"], band, live, ready)
    assert verdict.state is HealthState.HEALTHY, verdict.reason
    assert "16,384 KV tokens = 2.00x" in verdict.reason
    loading = judge_seat(seat, fleet.hosts["rig"], band, live, Endpoints(health_status=503))
    assert loading.state is HealthState.STARTING and "503" in loading.reason


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            ("parallel: 2", "kv_cache_bytes: 4GiB"),
            "seats/gguf-coder.yaml:9: error: llama.cpp sizes its KV cache by context x parallel "
            "slots: remove kv_cache_bytes",
        ),
        (
            ("parallel: 2", "parallel: 2\nspeculative: {method: mtp, num_tokens: 3}"),
            "seats/gguf-coder.yaml:10: error: llama.cpp drafts only with a separate model: "
            "method draft_model, not 'mtp'",
        ),
        (
            ("engine: llama.cpp", "engine: vllm\ngpu_memory_utilization: 0.5"),
            "seats/gguf-coder.yaml:10: error: parallel is for llama.cpp seats: vLLM batches "
            "requests within its KV budget",
        ),
    ],
    ids=["kv-bytes-on-llamacpp", "mtp-on-llamacpp", "parallel-on-vllm"],
)
def test_validation_says_what_llamacpp_cannot_take(edit: tuple[str, str], message: str) -> None:
    errors = errors_with(CODER.replace(*edit))
    assert [e for e in errors if e.endswith(message)] == [f"desired/{message}"], errors
