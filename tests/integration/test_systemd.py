"""Seats as systemd units on the lab's real systemd hosts (systemd-nspawn containers).

The hosts boot once for this module (`systemd_hosts`); every test reaches them only
over SSH, as fleet does: the lab's client key and the hosts' pinned host keys.
"""

from __future__ import annotations

import subprocess
import time

import pytest

from tests.lab import Lab
from tests.lab.nspawn import SystemdHost

pytestmark = pytest.mark.lab

UNIT = "lab-probe"
URL = "http://127.0.0.1:8090/health"
UNIT_TEXT = """[Unit]
Description=llama-server stand-in for the lab's own checks

[Service]
ExecStart=/usr/local/bin/llama-server --model /models/qwen3-0.6b-q4_k_m.gguf --alias probe \
    --host 0.0.0.0 --port 8090 --ctx-size 2048 --parallel 1 --n-gpu-layers 0
Restart=on-failure
RestartSec=1
"""


def show(lab: Lab, host: str, unit: str, *props: str) -> dict[str, str]:
    """`systemctl show -p ...` of a unit on a host, as a dict."""
    out = lab.run(host, f"systemctl show {unit} -p {','.join(props)}", check=True).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def wait_show(lab: Lab, host: str, unit: str, prop: str, value: str, timeout: float = 60) -> None:
    """Poll until the unit's property has the value (a busy machine needs seconds)."""
    deadline = time.monotonic() + timeout
    while show(lab, host, unit, prop)[prop] != value:
        if time.monotonic() > deadline:
            pytest.fail(
                f"{host}: {unit} {prop} never became {value}: {show(lab, host, unit, prop)}"
            )
        time.sleep(0.5)


def test_hosts_are_booted_systemd_reached_over_ssh_with_pinned_keys(
    lab: Lab, systemd_hosts: list[SystemdHost]
) -> None:
    for host in systemd_hosts:
        state = lab.run(host.name, "systemctl is-system-running --wait; hostname", check=True)
        assert state.stdout.split() == ["running", host.name]
        assert lab.run(host.name, "cat /proc/1/comm").stdout.strip() == "systemd"
    other_key = lab.known_hosts.with_name("other_known_hosts")
    lines = lab.known_hosts.read_text().splitlines()
    gpu, cpu = systemd_hosts
    cpu_key = next(ln for ln in lines if ln.startswith(f"[{cpu.address}]")).split()[1:]
    swapped = [ln for ln in lines if not ln.startswith(f"[{gpu.address}]")]
    swapped.append(f"[{gpu.address}]:2222 {' '.join(cpu_key)}")
    other_key.write_text("\n".join(swapped) + "\n")
    refused = subprocess.run(
        [
            "ssh",
            "-F",
            str(lab.ssh_config),
            "-o",
            f"UserKnownHostsFile={other_key}",
            gpu.name,
            "true",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 255
    assert "host key" in refused.stderr.lower() or "identification" in refused.stderr.lower()


def test_gpu_host_has_its_gpu_and_the_cpu_host_none(
    lab: Lab, systemd_hosts: list[SystemdHost]
) -> None:
    gpu, cpu = systemd_hosts
    listed = lab.run(gpu.name, "nvidia-smi -L", check=True).stdout
    assert listed.startswith("GPU 0: NVIDIA GeForce RTX 3090 (UUID: GPU-")
    assert lab.run(cpu.name, "command -v nvidia-smi").returncode == 1


def test_a_unit_starts_logs_restarts_after_kill_and_stops(
    lab: Lab, systemd_hosts: list[SystemdHost]
) -> None:
    host = systemd_hosts[1].name
    lab.run(host, f"cat > /etc/systemd/system/{UNIT}.service", input=UNIT_TEXT, check=True)
    lab.run(host, f"systemctl daemon-reload && systemctl start {UNIT}", check=True)
    try:
        wait_show(lab, host, UNIT, "SubState", "running")
        first = show(lab, host, UNIT, "MainPID", "NRestarts", "FragmentPath")
        assert first["NRestarts"] == "0"
        assert first["FragmentPath"] == f"/etc/systemd/system/{UNIT}.service"
        health = f"python3 -c \"import urllib.request as u; print(u.urlopen('{URL}').read())\""
        deadline = time.monotonic() + 60
        while '"ok"' not in lab.run(host, health).stdout:
            assert time.monotonic() < deadline, "the unit's llama-server never became healthy"
            time.sleep(0.5)
        lab.run(host, f"kill -9 {first['MainPID']}", check=True)
        wait_show(lab, host, UNIT, "NRestarts", "1")
        wait_show(lab, host, UNIT, "SubState", "running")
        assert show(lab, host, UNIT, "MainPID")["MainPID"] != first["MainPID"]
        journal = lab.run(host, f"journalctl -u {UNIT} --no-pager -o cat", check=True).stdout
        assert "main: server is listening on http://0.0.0.0:8090" in journal
        assert "Main process exited, code=killed, status=9/KILL" in journal
    finally:
        lab.run(host, f"systemctl stop {UNIT}", check=True)
    assert show(lab, host, UNIT, "ActiveState")["ActiveState"] == "inactive"
