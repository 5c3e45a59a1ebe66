"""fleet import's files for hand-made containers: what desired/ would say, and that it validates."""

from __future__ import annotations

import json

from fleet.gateways.litellm.config import parse_gateway_config
from fleet.gateways.litellm.settings import LiteLLMSettings
from fleet.observed.assemble import assemble_host
from fleet.observed.models import Observation, ObservedGateway
from fleet.plan.plan import make_plan
from fleet.render.desired_files import HostAccess, import_fleet
from fleet.runtimes import validate_fleet
from fleet.runtimes.compose import COMPOSE
from fleet.spec.load import load_fleet
from fleet.spec.problems import Severity
from tests.unit.observe.test_assemble import GPU0, GPU1, container

VLLM_ID, LLAMA_ID, NOTE_ID = "a" * 64, "b" * 64, "c" * 64
GATEWAY = """model_list:
  - model_name: chat
    litellm_params: {model: hosted_vllm/chat, api_base: http://127.0.0.12:8000/v1, max_tokens: 512}
  - model_name: gguf
    litellm_params: {model: openai/gguf, api_base: http://127.0.0.12:8080/v1, api_key: sk-x}
  - model_name: gpt-4o
    litellm_params: {model: openai/gpt-4o, api_key: os.environ/OPENAI_API_KEY}
"""


def handmade(cid: str, name: str, pid: int, argv: list[str], env: list[str]) -> dict[str, object]:
    item = container(cid, name, pid, {"com.docker.compose.service": name}, argv)
    item["Config"]["Env"] = ["PATH=/usr/bin", *env]  # type: ignore[index]
    return item


def observation(more_argv: tuple[str, ...] = (), more_env: tuple[str, ...] = ()) -> Observation:
    vllm = [
        "python3",
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        "/models/chat-8b",
        "--served-model-name",
        "chat",
        "--port",
        "8000",
        "--max-model-len",
        "32768",
        "--gpu-memory-utilization",
        "0.5",
        "--enable-prefix-caching",
        *more_argv,
    ]
    llama = [
        "/app/llama-server",
        "-m",
        "/models/q.gguf",
        "-c",
        "8192",
        "-np",
        "2",
        "--port",
        "8080",
        "--alias",
        "gguf",
    ]
    inspect = [
        handmade(
            VLLM_ID, "chat", 4100, vllm, ["HF_TOKEN=hf_abcdefghijklmnopqrstuvwx", "X=1", *more_env]
        ),
        handmade(LLAMA_ID, "gguf", 4200, llama, []),
        handmade(NOTE_ID, "notebook", 4300, ["jupyter", "lab"], []),
    ]
    image = [
        {
            "Id": "sha256:" + "c" * 64,
            "RepoDigests": ["vllm/vllm-openai@sha256:" + "d" * 64],
            "Config": {"Env": ["PATH=/usr/bin"]},
        }
    ]
    output = "\n".join(
        [
            "@@FLEET gpus",
            f"0, {GPU0}, NVIDIA GeForce RTX 3090, 24576, 13000",
            f"1, {GPU1}, NVIDIA GeForce RTX 3090, 24576, 9000",
            "@@FLEET gpus-rc 0",
            "@@FLEET apps",
            f"4177, {GPU0}, 12288",
            f"4288, {GPU1}, 8800",
            "@@FLEET cgroup 4177",
            f"0::/docker/{VLLM_ID}",
            "@@FLEET cgroup 4288",
            f"0::/docker/{LLAMA_ID}",
            "@@FLEET docker-rc 0",
            "@@FLEET inspect",
            json.dumps(inspect),
            "@@FLEET images",
            json.dumps(image),
            "@@FLEET end",
        ]
    )
    return Observation(observed_at="T", hosts={"rig": assemble_host("rig", output, COMPOSE)})


def imported() -> dict[str, str]:
    access = {"rig": HostAccess(alias="rig", address="127.0.0.12")}
    result = import_fleet(observation(), access, ("rig", "/etc/litellm/config.yaml", GATEWAY))
    assert result.variables == ["HF_TOKEN"]
    return result.files


def test_every_engine_container_becomes_a_seat_and_nothing_else() -> None:
    assert sorted(imported()) == [
        "fleet.yaml",
        "gateway.yaml",
        "hosts/rig.yaml",
        "seats/chat.yaml",
        "seats/gguf.yaml",
    ]


def test_the_imported_fleet_validates_and_says_what_runs() -> None:
    loaded = load_fleet(imported())
    problems = [p for p in validate_fleet(loaded) if p.severity is Severity.ERROR]
    assert problems == [] and loaded.fleet is not None
    chat, gguf = loaded.fleet.seats["chat"], loaded.fleet.seats["gguf"]
    assert (chat.model, chat.served_name, chat.port, chat.context) == (
        "/models/chat-8b",
        "chat",
        8000,
        32768,
    )
    assert (chat.gpus, chat.gpu_memory_utilization, chat.extra_args) == (
        (0,),
        0.5,
        ("--enable-prefix-caching",),
    )
    assert chat.image == "vllm/vllm-openai:v0.11.2@sha256:" + "d" * 64
    assert chat.env == {"HF_TOKEN": "${HF_TOKEN}", "X": "1"}
    assert chat.aliases == ("chat",)
    assert (gguf.engine, gguf.context, gguf.parallel, gguf.gpus, gguf.aliases) == (
        "llama.cpp",
        4096,
        2,
        (1,),
        ("gguf",),
    )
    gateway = loaded.fleet.gateway
    assert gateway is not None and isinstance(gateway.settings, LiteLLMSettings)
    assert gateway.settings.provider_prefix in ("hosted_vllm/", "openai/")
    assert gateway.settings.alias_params == {
        "chat": {"max_tokens": 512},
        "gguf": {"api_key": "os.environ/GGUF_API_KEY"},
    }


def test_no_secret_value_reaches_the_files() -> None:
    text = "".join(imported().values())
    assert "hf_abcdefghij" not in text and "sk-x" not in text


def test_secrets_of_a_running_container_stay_out_of_desired() -> None:
    """A literal in the argv or the environment becomes a note or a ${VAR} reference."""
    secret = "Zq8wLx3vNp2Rt7Ks"
    argv = ("--api-key", secret, f"--hf-token={secret}", "--max-num-seqs", "8")
    env = (f"DB_PASS={secret}", f"AUTH={secret}", f"DATABASE_URL=postgres://u:{secret}@db/x")
    access = {"rig": HostAccess(alias="rig", address="127.0.0.12")}
    files = import_fleet(observation(argv, env), access, ("rig", "/x.yaml", GATEWAY)).files
    chat = files["seats/chat.yaml"]
    assert secret not in "".join(files.values()) and "***" not in chat
    assert '"--max-num-seqs", "8"' in chat and "--api-key" not in chat.split("# import")[0]
    assert "# import could not express: --api-key: a secret in the engine's argv" in chat
    assert '"DB_PASS": "${DB_PASS}"' in chat and '"DATABASE_URL": "${DATABASE_URL}"' in chat
    problems = validate_fleet(load_fleet(files))
    assert [str(p) for p in problems if "secret" in p.message or "literal" in p.message] == []


def test_each_value_names_its_source() -> None:
    seat = imported()["seats/chat.yaml"].splitlines()
    assert all("  # " in line for line in seat if line and not line.startswith("#"))


def test_right_after_import_plan_adopts_every_seat_without_a_restart() -> None:
    loaded = load_fleet(imported())
    assert loaded.fleet is not None
    plan = make_plan(loaded.fleet, observation())
    assert [a for a in plan.actions if a.wave == 1] == []
    reasons = {n.target: n.reason for n in plan.noops}
    assert reasons["chat"].startswith("adopted (not yet under fleet's compose project)")
    assert reasons["gguf"].startswith("adopted (not yet under fleet's compose project)")
    unmanaged = [f.target for f in plan.findings if f.kind.value == "unmanaged-container"]
    assert unmanaged == ["rig/notebook"]  # the container desired/ does not name stays one


def test_a_real_change_replaces_the_hand_made_container_under_fleets_project() -> None:
    files = imported()
    files["seats/chat.yaml"] = files["seats/chat.yaml"].replace("context: 32768", "context: 16384")
    loaded = load_fleet(files)
    assert loaded.fleet is not None
    (action,) = [a for a in make_plan(loaded.fleet, observation()).actions if a.wave == 1]
    assert (action.kind.value, action.target, action.adopts) == ("replace-seat", "chat", "chat")
    assert [(c.field, c.old, c.new) for c in action.changes] == [("context", 32768, 16384)]


def test_hand_written_gateway_entries_that_route_as_imported_are_adopted_too() -> None:
    loaded = load_fleet(imported())
    assert loaded.fleet is not None
    live = observation().model_copy(
        update={
            "gateway": ObservedGateway(
                host="rig",
                config_path="/etc/litellm/config.yaml",
                config_text=GATEWAY,
                config=parse_gateway_config(GATEWAY),
            )
        }
    )
    plan = make_plan(loaded.fleet, live)
    targets = {a.target: a.reasons for a in plan.actions if a.wave == 2}
    assert "chat" not in targets  # it routes exactly as desired/ says: left as it is
    assert targets["gguf"][0].startswith("adopt the hand-written entry")  # import said it differs
    assert "routes as openai/gguf" in imported()["gateway.yaml"]
