"""`fleet inventory` and `fleet check` against the lab (issue: observe read-only)."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest

from fleet.runtimes import host_script
from fleet.runtimes.compose import render_compose
from reconciler.adapters.connections import Connections
from reconciler.workflows.observe import observe_fleet
from tests.integration.helpers import FleetRepo
from tests.lab.lab import Lab
from tests.waiting import wait_until

pytestmark = pytest.mark.lab


def unmanaged(address: str) -> str:
    """A compose project fleet does not manage, holding GPU 3 on the host at `address`."""
    return f"""services:
  notebook:
    image: vllm/vllm-openai:v0.18.0
    entrypoint: [vllm, serve]
    command: [/models/stories42M-embed, --served-model-name, scratch, --port, "8099",
              --max-model-len, "1024", --kv-cache-memory-bytes, "268435456"]
    ports: ["{address}:8099:8099"]
    volumes: ["/models/stories42M-embed:/models/stories42M-embed:ro"]
    deploy:
      resources:
        reservations:
          devices: [{{driver: nvidia, device_ids: ["3"], capabilities: [gpu]}}]
"""


def inventory_json(repo: FleetRepo) -> dict[str, object]:
    result = repo.fleet("inventory", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def seats_of(inventory: dict[str, object], host: str) -> dict[str, dict[str, object]]:
    hosts = {h["name"]: h for h in inventory["hosts"]}  # type: ignore[index, union-attr]
    return {s["seat"]: s for s in hosts[host]["seats"]}  # type: ignore[index]


def test_seats_gpus_tp_and_engine_facts(repo: FleetRepo) -> None:
    repo.deploy("tower")
    repo.deploy("rig")
    inventory = inventory_json(repo)
    tower = seats_of(inventory, "tower")
    assert {name: s["gpus"] for name, s in tower.items()} == {
        "coder": [0],
        "embed": [1],
        "reason": [2, 3],
    }
    reason = tower["reason"]
    assert reason["architecture"] == "Qwen3ForCausalLM" and reason["layers"] == 64
    assert reason["kv_cache_tokens"] and reason["context"] == 40960
    assert reason["concurrency"] == pytest.approx(reason["kv_cache_tokens"] / 40960, abs=0.01)
    assert sorted(reason["aliases"]) == ["assistant", "chat", "reason"] or reason["aliases"] == []
    rig = seats_of(inventory, "rig")
    assert rig["llama8b"]["gpus"] == [0] and rig["llama8b"]["state"] == "running"


def test_the_gpu_is_held_by_the_engine_child(repo: FleetRepo) -> None:
    repo.deploy("rig")
    fleet = repo.load()
    with Connections(fleet, repo.lab.ssh_config) as connections:
        observation = observe_fleet(fleet, connections, hosts=["rig"])
    rig = observation.hosts["rig"]
    seat = rig.seat("llama8b")
    assert seat is not None
    holders = [p for p in rig.processes if p.container_id == seat.instance.id]
    assert holders, "nvidia-smi's process maps to the seat's container through its cgroup"
    assert all(p.pid != seat.instance.pid for p in holders), "it is the engine's child"


def test_unmanaged_gpu_process_is_a_finding(repo: FleetRepo) -> None:
    repo.deploy("tower")
    scratch = unmanaged(repo.lab.address_of("tower"))
    assert repo.lab.compose_up("tower", "scratch", scratch).returncode == 0
    findings = inventory_json(repo)["findings"]
    kinds = {(f["kind"], f["target"]) for f in findings}  # type: ignore[union-attr, index]
    assert ("unmanaged-gpu-process", "tower/gpu3") in kinds
    assert ("unmanaged-container", "tower/scratch-notebook-1") in kinds


def test_dead_alias_floating_tag_and_drifted_model(repo: FleetRepo) -> None:
    text = render_compose(repo.load(), "tower").replace(
        "image: vllm/vllm-openai:v0.18.0\n    entrypoint:\n      - vllm\n      - serve\n"
        "    command:\n      - /models/TinyLlama",
        "image: vllm/vllm-openai:latest\n"
        "    entrypoint:\n      - vllm\n      - serve\n    command:\n      - /models/TinyLlama",
    )
    assert ":latest" in text, "the coder seat runs a floating tag the spec does not say"
    assert repo.lab.compose_up("tower", "fleet-tower", text).returncode == 0
    entry = (
        "  - model_name: chat\n    litellm_params:\n      model: hosted_vllm/reason\n"
        f"      api_base: http://{repo.lab.address_of('tower')}:8030/v1\n"
    )
    config = repo.lab.gateway_config().replace("model_list:\n", "model_list:\n" + entry, 1)
    repo.lab.set_gateway_config(config)
    found = {(f["kind"], f["target"]) for f in inventory_json(repo)["findings"]}  # type: ignore[union-attr, index]
    assert ("dead-alias", "alias sec-old") in found
    assert ("dead-alias", "alias code-legacy") in found
    assert ("floating-tag", "tower/coder") in found
    assert ("model-drift", "alias chat") in found


def test_unreachable_host_is_reported_the_others_observed(repo: FleetRepo) -> None:
    repo.deploy("tower")
    rig = repo.lab.address_of("rig")
    repo.edit("hosts/rig.yaml", "alias: rig", f"address: {rig}\n  port: 2299")
    result = repo.fleet("inventory", "--json")
    assert result.returncode == 1
    assert f"error: rig: cannot reach root@{rig}:2299" in result.stderr
    assert "Traceback" not in result.stderr
    assert seats_of(json.loads(result.stdout), "tower")["coder"]["state"] == "running"


def test_unknown_host_key_is_an_error(repo: FleetRepo, tmp_path: Path) -> None:
    config = tmp_path / "ssh_config"
    config.write_text(
        repo.lab.ssh_config.read_text().replace(
            str(repo.lab.known_hosts), str(tmp_path / "empty_known_hosts")
        )
    )
    (tmp_path / "empty_known_hosts").write_text("")
    result = repo.fleet("inventory", env={"FLEET_SSH_CONFIG": str(config)})
    assert result.returncode == 1
    tower = repo.lab.address_of("tower")
    assert f"host key of root@{tower}:2222 is not in known_hosts" in result.stderr


def test_changed_host_key_is_an_error(repo: FleetRepo, tmp_path: Path) -> None:
    """tower's pinned key replaced by rig's: a man in the middle, not a prompt."""
    tower, rig = repo.lab.address_of("tower"), repo.lab.address_of("rig")
    lines = repo.lab.known_hosts.read_text().splitlines()
    rig_key = next(line for line in lines if line.startswith(f"[{rig}]:2222"))
    forged = [line for line in lines if not line.startswith(f"[{tower}]:2222")]
    forged.append(rig_key.replace(f"[{rig}]:2222", f"[{tower}]:2222", 1))
    known = tmp_path / "known_hosts"
    known.write_text("\n".join(forged) + "\n")
    config = tmp_path / "ssh_config"
    config.write_text(
        repo.lab.ssh_config.read_text().replace(str(repo.lab.known_hosts), str(known))
    )
    result = repo.fleet("inventory", env={"FLEET_SSH_CONFIG": str(config)})
    assert result.returncode == 1
    assert f"error: tower: host key CHANGED for root@{tower}:2222" in result.stderr


def test_check_agrees_then_diverges(repo: FleetRepo) -> None:
    repo.deploy("tower")
    repo.deploy("rig")
    written = repo.fleet("inventory", "--write")
    assert written.returncode == 0, written.stderr
    repo.commit("inventory")
    first = (repo.root / "inventory" / "INVENTORY.md").read_text()
    agree = repo.fleet("check")
    assert agree.returncode == 0, agree.stdout + agree.stderr
    assert "in sync" in agree.stdout
    again = repo.fleet("inventory")
    assert _no_stamp(again.stdout) == _no_stamp(first), "deterministic but for the timestamp"
    repo.lab.docker("rig", "stop", "-t", "0", "fleet-rig-llama8b-1")
    diverge = repo.fleet("check", "--diff")
    assert diverge.returncode == 2, diverge.stdout + diverge.stderr
    assert "-| `llama8b` |" in diverge.stdout and "+| `llama8b` **exited** |" in diverge.stdout
    summary = repo.fleet("check")
    assert summary.returncode == 2
    assert "  seat llama8b on rig: running -> exited" in summary.stdout.splitlines()
    assert "-| `llama8b` |" not in summary.stdout  # the unified diff only with --diff
    as_json = json.loads(repo.fleet("check", "--json").stdout)
    assert as_json["in_sync"] is False
    assert "seat llama8b on rig: running -> exited" in as_json["drift"]


def _no_stamp(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith("Generated at: ")]


MUTATING = {
    "create",
    "start",
    "stop",
    "kill",
    "die",
    "destroy",
    "restart",
    "pause",
    "unpause",
    "rename",
    "update",
    "pull",
    "tag",
    "untag",
    "delete",
    "import",
    "commit",
    "connect",
    "disconnect",
    "mount",
    "unmount",
    "remove",
    "prune",
    "oom",
}


def _events(lab: Lab, host: str, since: float, until: float) -> list[str]:
    result = lab.docker(
        host,
        "events",
        "--since",
        f"{since:.0f}",
        "--until",
        f"{until:.0f}",
        "--format",
        "{{.Type}} {{.Action}} {{.Actor.ID}}",
    )
    return [line for line in result.stdout.splitlines() if line.strip()]


def _events_through_a_marker(lab: Lab, host: str, since: float) -> list[str]:
    """The host's docker events since `since`, once its daemon logged a marker made now
    (a volume created and removed): then every event of what ran before is in, and the
    marker's own are left out."""
    marker = f"fleet-test-marker-{uuid.uuid4().hex[:12]}"
    lab.docker(host, "volume", "create", marker)
    lab.docker(host, "volume", "rm", marker)

    def through() -> tuple[list[str]] | None:
        events = _events(lab, host, since, time.time())
        gone = [i for i, e in enumerate(events) if e.split()[1:] == ["destroy", marker]]
        return ([e for e in events[: gone[0]] if marker not in e],) if gone else None

    (before,) = wait_until(through, 60, f"the marker event on {host}", interval=0.5)
    return before


def _snapshot(lab: Lab) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for host in lab.hosts.values():
        for path in sorted(host.root.rglob("*")):
            if path.is_file() and ("srv" in path.parts or "etc-litellm" in path.parts):
                files[str(path)] = path.read_bytes()
    return files


def test_inventory_and_check_never_mutate(repo: FleetRepo) -> None:
    repo.deploy("tower")
    repo.deploy("rig")
    repo.fleet("inventory", "--write")
    repo.commit("inventory")
    before = _snapshot(repo.lab)
    since = time.time() - 1
    fleet = repo.load()
    with Connections(fleet, repo.lab.ssh_config) as connections:
        observe_fleet(fleet, connections)
        operations = connections.operations()
    assert repo.fleet("check").returncode == 0
    assert repo.fleet("inventory").returncode == 0
    for host in repo.lab.hosts:
        mutating = [
            e
            for e in _events_through_a_marker(repo.lab, host, since)
            if e.split()[1].rstrip(":") in MUTATING  # the engines' own healthchecks exec
        ]
        assert mutating == [], f"{host}: docker events during read-only commands: {mutating}"
    assert _snapshot(repo.lab) == before, "no file on any host changed"
    kinds = {kind for _, kind, _ in operations}
    assert kinds <= {"connect", "exec", "sftp-read", "tcp", "http"}, kinds
    scripts = {detail for _, kind, detail in operations if kind == "exec"}
    assert scripts == {"sh -s"}, scripts
    script = host_script(repo.load().hosts["tower"], ["/models/x"])
    docker_calls = {
        line.split("docker ", 1)[1].split()[0] for line in script.splitlines() if "docker " in line
    }
    assert docker_calls <= {"ps", "inspect", "image", "logs"}, docker_calls
    assert all(detail.startswith("GET ") for _, kind, detail in operations if kind == "http")
