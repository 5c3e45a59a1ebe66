"""llama.cpp seats end to end against the lab: one on the CPU-only host (cpubox), one on a
GPU of rig: created behind the health gate, changed, a failing start rolled back, and the
inventory (concurrency as llama.cpp means it: its parallel slots)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.integration.helpers import FleetRepo, make_repo
from tests.lab.lab import Lab

pytestmark = pytest.mark.lab

CPU_SEAT = """host: cpubox
gpus: []
engine: llama.cpp
image: ghcr.io/ggml-org/llama.cpp:server-b6100
model: /models/qwen3-0.6b-q4_k_m.gguf
served_name: gguf-cpu
context: 4096
parallel: 2
port: 8070
"""
GPU_SEAT = """host: rig
gpus: [1]
engine: llama.cpp
image: ghcr.io/ggml-org/llama.cpp:server-cuda-b6100
model: /models/qwen3-8b-q4_k_m.gguf
served_name: gguf-gpu
context: 8192
parallel: 2
port: 8071
"""


@pytest.fixture
def llama(clean_lab: Lab, tmp_path: Path) -> FleetRepo:
    repo = make_repo(tmp_path, clean_lab, seats=())
    address = clean_lab.address_of("cpubox")
    (repo.desired / "hosts" / "cpubox.yaml").write_text(
        f"ssh: {{alias: cpubox}}\naddress: {address}\npublish_address: {address}\ngpus: []\n"
    )
    (repo.desired / "seats" / "gguf-cpu.yaml").write_text(CPU_SEAT)
    (repo.desired / "seats" / "gguf-gpu.yaml").write_text(GPU_SEAT)
    repo.commit("two llama.cpp seats")
    return repo


def apply(repo: FleetRepo) -> str:
    result = repo.fleet("apply", "--auto-approve", "--timeout", "120")
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def container_id(lab: Lab, host: str, name: str) -> str:
    return lab.docker(host, "inspect", "-f", "{{.Id}}", name).stdout.strip()


def test_llamacpp_seats_create_change_roll_back_and_inventory(llama: FleetRepo) -> None:
    repo, lab = llama, llama.lab
    assert repo.fleet("validate").returncode == 0
    created = apply(repo)
    assert "cpubox: seat gguf-cpu healthy: serves gguf-cpu" in created
    assert "rig: seat gguf-gpu healthy: serves gguf-gpu" in created and "on GPU 1" in created
    assert repo.fleet("plan").returncode == 0  # in sync: a llama.cpp seat converges

    inventory = json.loads(repo.fleet("inventory", "--json").stdout)
    rows = {row["seat"]: row for host in inventory["hosts"] for row in host["seats"]}
    assert rows["gguf-cpu"]["concurrency"] == 2.0 and rows["gguf-cpu"]["gpus"] == []
    assert rows["gguf-cpu"]["kv_cache_tokens"] == 4096 * 2
    assert rows["gguf-gpu"]["gpus"] == [1] and rows["gguf-gpu"]["concurrency"] == 2.0

    before = container_id(lab, "cpubox", "fleet-cpubox-gguf-cpu-1")
    repo.edit("seats/gguf-cpu.yaml", "context: 4096", "context: 2048")
    apply(repo)
    assert container_id(lab, "cpubox", "fleet-cpubox-gguf-cpu-1") not in ("", before)

    running = container_id(lab, "rig", "fleet-rig-gguf-gpu-1")
    repo.edit("seats/gguf-gpu.yaml", "qwen3-8b-q4_k_m.gguf", "not-a-model.gguf")
    failed = repo.fleet("apply", "--auto-approve", "--timeout", "120")
    assert failed.returncode == 1 and "rolled back" in failed.stderr
    state = lab.docker("rig", "inspect", "-f", "{{.State.Status}}", "fleet-rig-gguf-gpu-1")
    assert state.stdout.strip() == "running" and running  # the previous seat serves again
