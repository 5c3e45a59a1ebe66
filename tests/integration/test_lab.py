"""The lab itself: real sshd with pinned keys, one Docker engine per host, production
GPU hand-over, nvidia-smi that reports the engines' child processes, and a `down` that
leaves nothing behind."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from ipaddress import ip_address, ip_network
from pathlib import Path

import pytest

from tests.lab import HostSpec, Lab
from tests.lab.compose import compose_text, seat
from tests.lab.procs import alive, mount_namespace, pids_in_namespaces
from tests.lab.spec import make_gpus
from tests.lab.state import LabState

pytestmark = pytest.mark.lab

PROJECT = "labtest"


def ssh(
    lab: Lab, host: str, *options: str, command: str = "true"
) -> subprocess.CompletedProcess[str]:
    """Plain OpenSSH with extra -o options on top of the lab's ssh_config."""
    argv = ["ssh", "-F", str(lab.ssh_config)]
    for option in options:
        argv += ["-o", option]
    return subprocess.run([*argv, host, command], capture_output=True, text=True, timeout=30)


@pytest.fixture(scope="module")
def seats(lab: Lab) -> Iterator[dict[str, str]]:
    """Two stand-in seats: one on tower (device reservation), one on rig (nvidia runtime),
    on a lab reset first (an earlier module on this worker may have left seats on the GPUs)."""
    lab.reset()
    tower = seat(
        address=lab.address_of("tower"),
        model="TinyLlama-1.1B-Chat-FP8",
        served="alpha",
        port=8061,
        gpus=[3],
        args=["--max-model-len", "2048", "--kv-cache-memory-bytes", "1GiB"],
    )
    rig = seat(
        address=lab.address_of("rig"),
        model="Llama-3.1-8B-Instruct",
        served="gamma",
        port=8063,
        gpus=[1],
        handover="runtime",
        image="vllm/vllm-openai:v0.11.2",
        args=["--max-model-len", "8192", "--kv-cache-memory-bytes", "2GiB"],
    )
    for host, service in (("tower", {"alpha": tower}), ("rig", {"gamma": rig})):
        result = lab.compose_up(host, PROJECT, compose_text(service))
        assert result.returncode == 0, result.stderr
    yield {"tower": f"{PROJECT}-alpha-1", "rig": f"{PROJECT}-gamma-1"}
    for host in ("tower", "rig"):
        lab.compose_down(host, PROJECT)


def test_ssh_logs_in_with_the_lab_key_and_host_environment(lab: Lab) -> None:
    result = lab.run("tower", "echo $DOCKER_HOST; command -v nvidia-smi docker; ls /models")
    assert result.returncode == 0, result.stderr
    assert lab.hosts["tower"].docker_host in result.stdout
    assert "Qwen3.5-27B.PROVENANCE.txt" in result.stdout
    assert "fleet-gateway-restart" in lab.run("gateway", "command -v fleet-gateway-restart").stdout


def test_sshd_rejects_an_unknown_host_key(lab: Lab, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    result = ssh(lab, "tower", f"UserKnownHostsFile={empty}")
    assert result.returncode == 255
    assert "Host key verification failed" in result.stderr


def test_known_hosts_pins_each_host_to_its_own_key(lab: Lab, tmp_path: Path) -> None:
    tower, rig = lab.address_of("tower"), lab.address_of("rig")
    lines = lab.known_hosts.read_text().splitlines()
    tower_key = next(ln for ln in lines if ln.startswith(f"[{tower}]")).split(" ", 1)[1]
    swapped = tmp_path / "known_hosts"
    swapped.write_text(f"[{rig}]:2222 {tower_key}\n")
    result = ssh(lab, "rig", f"UserKnownHostsFile={swapped}", "LogLevel=ERROR")
    assert result.returncode == 255
    assert "REMOTE HOST IDENTIFICATION HAS CHANGED" in result.stderr


def test_sshd_rejects_a_wrong_client_key(lab: Lab, tmp_path: Path) -> None:
    key = tmp_path / "stranger"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    argv = [
        "ssh",
        "-F",
        "none",
        "-p",
        "2222",
        "-i",
        str(key),
        "-o",
        "IdentitiesOnly=yes",
        "-o",
        f"UserKnownHostsFile={lab.known_hosts}",
        "-o",
        "StrictHostKeyChecking=yes",
        "-o",
        "BatchMode=yes",
        f"root@{lab.address_of('tower')}",
        "true",
    ]
    result = subprocess.run(
        argv, capture_output=True, text=True, timeout=30, env={"PATH": "/usr/bin"}
    )
    assert result.returncode == 255
    assert "Permission denied (publickey)" in result.stderr


def test_docker_ps_is_per_host(lab: Lab) -> None:
    run = lab.docker(
        "rig",
        "run",
        "-d",
        "--name",
        "lab-only-on-rig",
        "--entrypoint",
        "sleep",
        "vllm/vllm-openai:v0.18.0",
        "60",
    )
    assert run.returncode == 0, run.stderr
    try:
        names = {
            h: lab.run(h, "docker ps -a --format '{{.Names}}'", check=True).stdout
            for h in ("tower", "rig", "gateway")
        }
        assert "lab-only-on-rig" in names["rig"]
        assert "lab-only-on-rig" not in names["tower"] + names["gateway"]
    finally:
        lab.docker("rig", "rm", "-f", "lab-only-on-rig")


def test_compose_with_nvidia_device_reservation_starts(lab: Lab, seats: dict[str, str]) -> None:
    state = lab.run(
        "tower",
        f"docker inspect -f '{{{{.State.Health.Status}}}} {{{{.State.Pid}}}}' {seats['tower']}",
        check=True,
    ).stdout.split()
    assert state[0] == "healthy"
    environ = lab.run("tower", f"tr '\\0' '\\n' < /proc/{state[1]}/environ", check=True).stdout
    assert "NVIDIA_VISIBLE_DEVICES=3" in environ.splitlines()


def compute_apps(lab: Lab, host: str) -> list[list[str]]:
    """nvidia-smi's process query on a host, as rows."""
    query = (
        "nvidia-smi --query-compute-apps=pid,process_name,used_memory,gpu_uuid "
        "--format=csv,noheader,nounits"
    )
    out = lab.run(host, query, check=True).stdout
    return [[f.strip() for f in line.split(",")] for line in out.splitlines() if line.strip()]


@pytest.mark.parametrize("host", ["tower", "rig"])
def test_nvidia_smi_pids_are_the_engine_child_of_the_right_container(
    lab: Lab, seats: dict[str, str], host: str
) -> None:
    inspect = lab.run(
        host, f"docker inspect -f '{{{{.Id}}}} {{{{.State.Pid}}}}' {seats[host]}", check=True
    ).stdout.split()
    container_id, main_pid = inspect[0], int(inspect[1])
    gpu = lab.hosts[host].spec.gpus[3 if host == "tower" else 1]
    rows = [r for r in compute_apps(lab, host) if r[3] == gpu.uuid]
    assert len(rows) == 1, rows
    pid = int(rows[0][0])
    assert pid != main_pid
    assert rows[0][1] == "VLLM::EngineCore"
    cgroup = lab.run(host, f"cat /proc/{pid}/cgroup", check=True).stdout
    assert set(re.findall(r"[0-9a-f]{64}", cgroup)) == {container_id}
    status = lab.run(host, f"cat /proc/{pid}/status", check=True).stdout
    assert re.search(rf"^PPid:\s+{main_pid}$", status, re.M)


def test_nvidia_smi_memory_is_what_the_engine_holds(lab: Lab, seats: dict[str, str]) -> None:
    gpu = lab.hosts["tower"].spec.gpus[3]
    query = "nvidia-smi -i 3 --query-gpu=name,memory.total,memory.used --format=csv,noheader"
    name, total, used = lab.run("tower", query, check=True).stdout.strip().split(", ")
    assert (name, total) == (gpu.name, f"{gpu.memory_mib} MiB")
    weights = sum(
        p.stat().st_size
        for p in (lab.hosts["tower"].models_dir / "TinyLlama-1.1B-Chat-FP8").glob("*.safetensors")
    )
    held_mib = int(used.split()[0])
    assert (weights + (1 << 30)) >> 20 < held_mib < ((weights + (1 << 30)) >> 20) + 1024


def test_nvidia_smi_fails_like_a_missing_driver_when_switched(lab: Lab) -> None:
    lab.fail_nvidia_smi("rig")
    try:
        result = lab.run("rig", "nvidia-smi --query-gpu=name --format=csv")
        assert result.returncode == 9
        assert "couldn't communicate with the NVIDIA driver" in result.stdout
    finally:
        lab.fail_nvidia_smi("rig", on=False)
    assert lab.run("rig", "nvidia-smi -L").returncode == 0


def test_docker_sdk_reaches_a_host_over_ssh_with_the_lab_home(lab: Lab) -> None:
    script = (
        "import docker; "
        f"c = docker.DockerClient(base_url='ssh://root@{lab.address_of('tower')}:2222'); "
        "print(c.version()['ApiVersion']); c.close()"
    )
    env = {"HOME": str(lab.home), "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [".venv/bin/python", "-c", script],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1.41"


def probe_lab(root: Path) -> Lab:
    """A one-host lab beside the session's (own slot: address, bridge and pool)."""
    spec = HostSpec(
        "probe",
        "127.0.0.31",
        20,
        make_gpus("probe", "NVIDIA GeForce RTX 3090", 24576, 1),
        models=("stories42M-embed",),
        image_tags=("v0.18.0",),
    )
    return Lab(root=root, hosts=(spec,))


def leftovers(probe: Lab, state: LabState) -> list[str]:
    """What of a recorded lab is still on the machine."""
    host = probe.hosts["probe"]
    pool = ip_network(host.pool)
    found = [f"process {r.pid}" for r in state.procs if alive(r.pid)]
    roots = {Path(h["root"]) for h in state.hosts.values()}
    found += [f"namespace process {p}" for p in pids_in_namespaces(set(state.namespaces), roots)]
    links = json.loads(subprocess.run(["ip", "-j", "addr"], capture_output=True, text=True).stdout)
    for link in links:
        addrs = [a["local"] for a in link.get("addr_info", []) if a["family"] == "inet"]
        if link["ifname"] == host.bridge or any(ip_address(a) in pool for a in addrs):
            found.append(f"bridge {link['ifname']}")
    found += [f"dir {d}" for d in (host.run_dir,) if Path(d).exists()]
    return found


def test_down_leaves_nothing_behind_even_after_a_crash(tmp_path: Path, lab: Lab) -> None:
    probe = probe_lab(tmp_path / "lab")
    probe.up()
    service = seat(
        address=probe.address_of("probe"),
        model="stories42M-embed",
        served="probe",
        port=8071,
        gpus=[0],
        args=["--kv-cache-memory-bytes", "64MiB"],
    )
    assert probe.compose_up("probe", "crash", compose_text({"probe": service})).returncode == 0
    state = LabState.load(probe.root / "state.json")
    dockerd = next(r for r in state.procs if r.role == "dockerd")
    subprocess.run(["kill", "-9", str(dockerd.pid)], check=True)  # the engine dies mid-run
    try:
        Lab(root=probe.root, hosts=tuple(h.spec for h in probe.hosts.values())).down()  # new run
        assert leftovers(probe, state) == []
        assert not (probe.hosts["probe"].root / "docker").exists()
    finally:
        probe.down()  # reaps the killed children of this process


def test_a_namespace_id_counts_only_with_the_labs_own_mounts(lab: Lab, tmp_path: Path) -> None:
    """A namespace id can be handed out again: a process in a recorded namespace is the
    lab's only if it binds /models from one of the lab's own hosts (else another lab's
    down would kill a container this lab is starting)."""
    state = LabState.load(lab.root / "state.json")
    sshd = next(r for r in state.procs if r.role == "sshd" and r.host == "tower")
    namespace = mount_namespace(sshd.pid)
    assert namespace in state.namespaces
    tower, rig = lab.hosts["tower"].root, lab.hosts["rig"].root
    assert sshd.pid in pids_in_namespaces({namespace}, {tower})
    assert sshd.pid not in pids_in_namespaces({namespace}, {rig, tmp_path / "another-lab"})
