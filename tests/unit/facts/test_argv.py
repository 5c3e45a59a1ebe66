"""parse_engine_argv on real command lines from the corpus and on each flag form."""

from __future__ import annotations

import re

import pytest
from ruamel.yaml import YAML

from fleet.engines import llamacpp, parse_engine_argv, vllm
from fleet.facts.argv import EngineArgs, parse_human_int
from tests.conftest import CORPUS

COMPOSE = CORPUS / "compose"


def harness_line(path: str, marker: str, line: int = 0) -> list[str]:
    """The argv a harness printed joined by spaces (its JSON has no spaces to protect)."""
    text = (CORPUS / path).read_text().splitlines()[line]
    return text.split(marker, 1)[1].split()


def test_vllm_serve_from_the_mtp_oom_log() -> None:
    argv = harness_line(
        "vllm-logs/v0.27.1_v1_qwen3.8-27b-int4-compressed-tensors_mtp_cuda-oom.log", "CMD: "
    )
    assert parse_engine_argv(argv) == EngineArgs(
        engine=vllm.NAME,
        program=(".venv-vllm/bin/vllm", "serve"),
        model="RedHatAI/Qwen3.8-27B-INT4",
        port=18191,
        max_model_len=8192,
        gpu_memory_utilization=0.90,
        speculative_config={"method": "mtp", "num_speculative_tokens": 1},
        extra=(
            "--no-enable-prefix-caching",
            "--max-num-seqs",
            "1",
            "--no-enable-log-requests",
            "--seed",
            "20260824",
        ),
    )


def test_flag_equals_value_from_the_v029_log() -> None:
    argv = harness_line(
        "vllm-logs/v0.29.0_v1-mrv2_gemma4-26b-a4b-fp8-dynamic_kv-cache-dtype-fp8_l40s.log",
        "vLLM flags: ",
        line=1,
    )
    args = parse_engine_argv(argv)
    assert args.engine == vllm.NAME  # no program: recognised by its vLLM-only flags
    assert args.model == "RedHatAI/gemma-4-26B-A4B-it-FP8-dynamic"
    assert args.served_model_names == ("gemma4-26b-l40s",)
    assert (args.host, args.port) == ("0.0.0.0", 8000)
    assert (args.max_model_len, args.gpu_memory_utilization) == (4096, 0.92)
    assert args.kv_cache_dtype == "fp8"
    assert args.extra[:3] == (
        "--language-model-only",
        "--no-enable-prefix-caching",
        "--default-chat-template-kwargs",
    )
    assert args.extra[-1] == "--block-size=16"


def test_llama_server_from_the_verbosity3_log() -> None:
    argv = harness_line(
        "llamacpp-logs/master-2026_cuda-rtx3090_qwen3.8-27b-q4kxl_verbosity3_slots1.log", "CMD: "
    )
    args = parse_engine_argv(argv)
    assert args.engine == llamacpp.NAME
    assert args.model is not None and args.model.endswith("/Qwen3.8-27B-UD-Q4_K_XL.gguf")
    assert (args.host, args.port, args.ctx_size, args.parallel_slots) == (
        "127.0.0.1",
        18138,
        8192,
        1,
    )
    assert (args.gpu_layers, args.kv_cache_dtype) == (999, "q8_0")
    assert args.extra == ("-fa", "on", "-ctv", "q8_0", "--no-webui", "--jinja", "--fit", "off")


def compose_commands(name: str, image: str = "") -> dict[str, list[str]]:
    """The command of each service whose image contains `image`, as compose would pass it
    with no environment set (`${VAR:-default}` -> default)."""
    services = YAML(typ="safe").load((COMPOSE / name).read_text())["services"]
    commands = {}
    for service, body in services.items():
        command = body.get("command", [])
        if isinstance(command, str):
            command = re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", command).split()
        if image in body.get("image", ""):
            commands[service] = [str(arg) for arg in command]
    return commands


def test_compose_vllm_command() -> None:
    (argv,) = compose_commands(
        "cloud-linuxer_gpt-oss_vllm_runtime-nvidia_env-defaults.docker-compose.yml"
    ).values()
    args = parse_engine_argv(argv)
    assert args.engine == vllm.NAME
    assert (args.model, args.host, args.port) == ("facebook/opt-125m", "0.0.0.0", 8000)
    assert (args.max_model_len, args.gpu_memory_utilization, args.tensor_parallel_size) == (
        4096,
        0.9,
        1,
    )
    assert args.extra == (
        "--dtype",
        "auto",
        "--enable-prefix-caching",
        "--enable-chunked-prefill",
        "--max-num-batched-tokens",
        "32768",
        "--max-num-seqs",
        "256",
    )


def test_compose_llama_server_commands() -> None:
    commands = compose_commands(
        "lyleclassen_homelab_llama-server-vulkan_multi-model_litellm.docker-compose.yml"
    )
    chat = parse_engine_argv(commands["llama-3.2-1b-instruct"])
    assert chat.engine == llamacpp.NAME
    assert chat.model == "/models/llama-3.2-1b-instruct-Q4_K_M.gguf"
    assert (chat.port, chat.gpu_layers, chat.ctx_size) == (8080, 99, 4096)
    assert chat.extra == ("--threads", "6", "--api-key", "dummy")
    llama = compose_commands(
        "lyleclassen_homelab_llama-server-vulkan_multi-model_litellm.docker-compose.yml",
        image="llama.cpp",
    )
    assert len(llama) == 4
    assert all(parse_engine_argv(argv).engine == llamacpp.NAME for argv in llama.values())
    assert parse_engine_argv(commands["litellm"]).engine is None


def test_compose_bare_host_and_port() -> None:
    """llama-server's router mode takes its config from LLAMA_ARG_* variables."""
    (argv,) = compose_commands(
        "yclepticstudios_ai-stack_llama-server-cuda_router-preset.docker-compose.yml"
    ).values()
    args = parse_engine_argv(argv)
    assert (args.engine, args.host, args.port, args.extra) == (None, "0.0.0.0", 9931, ())


COMPOSE_COVERED = frozenset(
    {
        "cloud-linuxer_gpt-oss_vllm_runtime-nvidia_env-defaults.docker-compose.yml",
        "lyleclassen_homelab_llama-server-vulkan_multi-model_litellm.docker-compose.yml",
        "yclepticstudios_ai-stack_llama-server-cuda_router-preset.docker-compose.yml",
    }
)


def test_every_compose_file_in_the_corpus_has_a_case() -> None:
    assert {path.name for path in COMPOSE.iterdir()} == COMPOSE_COVERED


SEAT = ["vllm", "serve", "/models/m"]
FLAGS = [
    # (id, argv after `vllm serve MODEL`, field, expected)
    ("port-space", ["--port", "8025"], "port", 8025),
    ("port-equals", ["--port=8025"], "port", 8025),
    ("underscore-spelling", ["--max_model_len=262144"], "max_model_len", 262144),
    ("max-model-len-decimal-k", ["--max-model-len", "32k"], "max_model_len", 32000),
    ("max-model-len-binary-k", ["--max-model-len", "256K"], "max_model_len", 262144),
    ("max-model-len-auto", ["--max-model-len", "auto"], "max_model_len", -1),
    (
        "kv-bytes-plain",
        ["--kv-cache-memory-bytes", "10737418240"],
        "kv_cache_memory_bytes",
        10 * 2**30,
    ),
    ("kv-bytes-binary-G", ["--kv-cache-memory-bytes=10G"], "kv_cache_memory_bytes", 10 * 2**30),
    ("kv-bytes-decimal-g", ["--kv-cache-memory-bytes", "14g"], "kv_cache_memory_bytes", 14 * 10**9),
    (
        "kv-bytes-gib-is-not-vllm",
        ["--kv-cache-memory-bytes", "10GiB"],
        "kv_cache_memory_bytes",
        None,
    ),
    ("utilization", ["--gpu-memory-utilization", "0.055"], "gpu_memory_utilization", 0.055),
    ("tp-short", ["-tp", "2"], "tensor_parallel_size", 2),
    ("tp-long", ["--tensor-parallel-size=4"], "tensor_parallel_size", 4),
    (
        "quantization",
        ["--quantization", "compressed-tensors"],
        "quantization",
        "compressed-tensors",
    ),
    (
        "served-names-several",
        ["--served-model-name", "sec", "sec-reasoning", "--port", "1"],
        "served_model_names",
        ("sec", "sec-reasoning"),
    ),
    (
        "speculative-json",
        ["--speculative-config", '{"method": "qwen3_5_mtp", "num_speculative_tokens": 3}'],
        "speculative_config",
        {"method": "qwen3_5_mtp", "num_speculative_tokens": 3},
    ),
    (
        "speculative-dotted",
        ["--speculative-config.method", "dflash", "--speculative-config.num_speculative_tokens=7"],
        "speculative_config",
        {"method": "dflash", "num_speculative_tokens": 7},
    ),
    ("speculative-bad-json", ["--speculative-config", "{method: mtp}"], "speculative_config", None),
    (
        "unknown-kept-in-order",
        ["--enforce-eager", "--seed", "1", "--port", "2", "-O3"],
        "extra",
        ("--enforce-eager", "--seed", "1", "-O3"),
    ),
    (
        "bad-value-kept",
        ["--port", "eighty", "--kv-cache-memory-bytes", "10GiB"],
        "extra",
        ("--port", "eighty", "--kv-cache-memory-bytes", "10GiB"),
    ),
]


@pytest.mark.parametrize(
    ("flags", "field", "expected"), [case[1:] for case in FLAGS], ids=[case[0] for case in FLAGS]
)
def test_vllm_flag_forms(flags: list[str], field: str, expected: object) -> None:
    args = parse_engine_argv([*SEAT, *flags])
    assert (args.engine, args.model) == (vllm.NAME, "/models/m")
    assert getattr(args, field) == expected


PROGRAMS = [
    (
        "api-server-module",
        ["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "/m", "--port", "8000"],
        vllm.NAME,
        ("python3", "-m", "vllm.entrypoints.openai.api_server"),
        "/m",
    ),
    (
        "vllm-serve-model-flag",
        ["vllm", "serve", "--model", "/m"],
        vllm.NAME,
        ("vllm", "serve"),
        "/m",
    ),
    (
        "shell-form",
        ["/bin/sh", "-c", "exec vllm serve /m --port 8000"],
        vllm.NAME,
        ("vllm", "serve"),
        "/m",
    ),
    (
        "llama-server-image",
        ["/app/llama-server", "-m", "/m.gguf", "-md", "/d.gguf", "--alias", "coder"],
        llamacpp.NAME,
        ("/app/llama-server",),
        "/m.gguf",
    ),
    (
        "console-script-in-proc",  # /proc/<pid>/cmdline of `vllm serve`: python + script path
        ["/usr/bin/python3", "/usr/local/bin/vllm", "serve", "/m", "--port", "8000"],
        vllm.NAME,
        ("/usr/bin/python3", "/usr/local/bin/vllm", "serve"),
        "/m",
    ),
    ("python-script", ["python3", "train.py", "--epochs", "3"], None, (), None),
    ("other-program", ["nginx", "-g", "daemon off;"], None, (), None),
    ("empty", [], None, (), None),
]


@pytest.mark.parametrize(
    ("argv", "engine", "program", "model"),
    [case[1:] for case in PROGRAMS],
    ids=[case[0] for case in PROGRAMS],
)
def test_programs(
    argv: list[str], engine: str | None, program: tuple[str, ...], model: str | None
) -> None:
    args = parse_engine_argv(argv)
    assert (args.engine, args.program, args.model) == (engine, program, model)


def test_llama_server_draft_and_alias() -> None:
    args = parse_engine_argv(
        ["/app/llama-server", "-m", "/m.gguf", "-md", "/d.gguf", "--alias", "coder"]
    )
    assert (args.draft_model, args.served_model_names) == ("/d.gguf", ("coder",))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1k", 1000),
        ("1K", 1024),
        ("25.6k", 25600),
        ("2M", 2 * 2**20),
        ("4096", 4096),
        ("1.5K", None),
        ("10GiB", None),
        ("", None),
    ],
    ids=["k", "K", "decimal-k", "M", "plain", "decimal-binary", "GiB", "empty"],
)
def test_human_int_follows_vllm(text: str, expected: int | None) -> None:
    assert parse_human_int(text) == expected
