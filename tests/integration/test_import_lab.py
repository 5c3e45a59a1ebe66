"""`fleet import` against the lab: seats started by hand the way operators do (a compose
file adapted from a real one in tests/corpus/compose, and a plain `docker run`), imported,
validated, adopted with no restart, then one changed and taken over under fleet's project.
"""

from __future__ import annotations

import json
from pathlib import Path

import git
import pytest

from tests.integration.helpers import FleetRepo
from tests.lab.lab import Lab

pytestmark = pytest.mark.lab

SECRET = "hf_importtestimporttestimporttest"

# tests/corpus/compose/cloud-linuxer_gpt-oss_vllm_runtime-nvidia_env-defaults.docker-compose.yml,
# adapted to the lab: its image and model, the GPU named, the port on the host's address.
HAND_COMPOSE = """\
services:
  vllm:
    image: vllm/vllm-openai:v0.9.2
    container_name: vllm-server
    environment:
      - VLLM_LOGGING_LEVEL=INFO
      - HF_TOKEN={secret}
    ports:
      - "{address}:8000:8000"
    volumes:
      - /models/TinyLlama-1.1B-Chat-FP8:/models/TinyLlama-1.1B-Chat-FP8:ro
    command: >
      --model /models/TinyLlama-1.1B-Chat-FP8
      --served-model-name chat
      --host 0.0.0.0
      --port 8000
      --max-model-len ${{MAX_MODEL_LEN:-2048}}
      --gpu-memory-utilization 0.02
      --enable-prefix-caching
    deploy:
      resources:
        reservations:
          devices:
            - driver: nvidia
              device_ids: ["0"]
              capabilities: [gpu]
    restart: unless-stopped
    healthcheck:
      test: ["CMD", "python3", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/health')"]
      interval: 2s
      retries: 60
"""


def ids(lab: Lab, host: str = "tower") -> dict[str, str]:
    listed = lab.docker(host, "ps", "-a", "--format", "{{.Names}} {{.ID}}").stdout.split("\n")
    return dict(line.split() for line in listed if line.strip())


def start_by_hand(lab: Lab) -> None:
    address = lab.hosts["tower"].address
    started = lab.compose_up(
        "tower", "handmade", HAND_COMPOSE.format(address=address, secret=SECRET)
    )
    assert started.returncode == 0, started.stdout + started.stderr
    run = lab.docker(
        "tower",
        "run",
        "-d",
        "--name",
        "embed-by-hand",
        "--gpus",
        "device=1",
        "-p",
        f"{address}:8018:8018",
        "-v",
        "/models/stories42M-embed:/models/stories42M-embed:ro",
        "vllm/vllm-openai:v0.18.0",
        "/models/stories42M-embed",
        "--served-model-name",
        "embed",
        "--port",
        "8018",
        "--max-model-len",
        "1024",
        "--kv-cache-memory-bytes",
        "268435456",
        "--runner",
        "pooling",
    )
    assert run.returncode == 0, run.stderr
    cpu = lab.hosts["cpubox"].address
    llama = lab.docker(
        "cpubox",
        "run",
        "-d",
        "--name",
        "gguf-by-hand",
        "-p",
        f"{cpu}:8075:8075",
        "-v",
        "/models/qwen3-0.6b-q4_k_m.gguf:/models/qwen3-0.6b-q4_k_m.gguf:ro",
        "ghcr.io/ggml-org/llama.cpp:server-b6100",
        "-m",
        "/models/qwen3-0.6b-q4_k_m.gguf",
        "-c",
        "8192",
        "-np",
        "2",
        "--host",
        "0.0.0.0",
        "--port",
        "8075",
        "--alias",
        "gguf",
    )
    assert llama.returncode == 0, llama.stderr
    routes = (
        f"  - model_name: chat\n    litellm_params:\n      model: hosted_vllm/chat\n"
        f"      api_base: http://{address}:8000/v1\n"
        f"  - model_name: embed\n    litellm_params:\n      model: hosted_vllm/embed\n"
        f"      api_base: http://{address}:8018/v1\n"
    )
    initial = lab.initial_gateway_config
    lab.set_gateway_config(initial.replace("model_list:\n", "model_list:\n" + routes, 1))
    restarted = lab.restart_gateway()  # put live, as by the hand that wrote it
    assert restarted.returncode == 0, restarted.stdout + restarted.stderr


def test_import_adopt_then_take_over_one_seat(clean_lab: Lab, tmp_path: Path) -> None:
    start_by_hand(clean_lab)
    root = tmp_path / "fleet-repo"
    root.mkdir()
    repo = FleetRepo(root=root, lab=clean_lab)
    with git.Repo.init(root).config_writer() as config:
        config.set_value("user", "name", "fleet tests")
        config.set_value("user", "email", "tests@fleet.invalid")
    before = ids(clean_lab)
    before_cpu = ids(clean_lab, "cpubox")
    imported = repo.fleet(
        "import",
        "--host",
        "tower",
        "--host",
        "cpubox",
        "--gateway",
        "gateway:/etc/litellm/config.yaml",
    )
    assert imported.returncode == 0, imported.stdout + imported.stderr
    assert "HF_TOKEN" in imported.stdout  # the variable to set, never its value
    seats = root / "desired" / "seats"
    assert sorted(p.name for p in seats.iterdir()) == [
        "embed-by-hand.yaml",
        "gguf-by-hand.yaml",
        "vllm.yaml",
    ]
    gguf = (seats / "gguf-by-hand.yaml").read_text()
    assert 'engine: "llama.cpp"' in gguf and "gpus: []" in gguf and "parallel: 2" in gguf
    text = "".join(p.read_text() for p in (root / "desired").rglob("*.yaml"))
    assert SECRET not in text and '"HF_TOKEN": "${HF_TOKEN}"' in text
    assert repo.fleet("validate").returncode == 0
    repo.commit("imported desired/")

    planned = repo.fleet("plan", "--json", env={"HF_TOKEN": SECRET})
    assert planned.returncode == 0, planned.stdout + planned.stderr
    noops = {n["target"]: n["reason"] for n in json.loads(planned.stdout)["noops"]}
    assert noops["vllm"].startswith("adopted (not yet under fleet's compose project)")
    assert noops["embed-by-hand"].startswith("adopted")
    assert noops["gguf-by-hand"].startswith("adopted")
    assert ids(clean_lab) == before and ids(clean_lab, "cpubox") == before_cpu  # no restart

    repo.edit("seats/embed-by-hand.yaml", "context: 1024", "context: 512")
    seat = seats / "embed-by-hand.yaml"
    seat.write_text(seat.read_text() + "concurrency_band: {min: 1, max: 1000}\n")
    repo.commit("embed: half the context")
    applied = repo.fleet("apply", "--auto-approve", "--timeout", "120", env={"HF_TOKEN": SECRET})
    assert applied.returncode == 0, applied.stdout + applied.stderr
    after = ids(clean_lab)
    assert "embed-by-hand" not in after  # taken over, then removed once the seat was healthy
    assert "fleet-tower-embed-by-hand-1" in after
    assert after["vllm-server"] == before["vllm-server"]  # the other hand-made seat untouched
    again = repo.fleet("plan", env={"HF_TOKEN": SECRET})
    assert again.returncode == 0, again.stdout + again.stderr
