"""Seats as systemd units on the lab's real systemd hosts (systemd-nspawn containers).

The hosts boot once for this module (`systemd_hosts`); every test reaches them only
over SSH, as fleet does: the lab's client key and the hosts' pinned host keys.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from fleet.yamltext import dump_yaml, make_yaml
from tests.fakes.units import HAND_MADE
from tests.integration.helpers import FleetRepo, chat, make_repo
from tests.lab import Lab
from tests.lab.load import ClientLoad, StreamLoad
from tests.lab.nspawn import SystemdHost
from tests.waiting import wait_until

pytestmark = pytest.mark.lab
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "llamacpp-fleet" / "desired"

UNITS = "/etc/systemd/system"
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
    wait_until(
        lambda: show(lab, host, unit, prop)[prop] == value,
        timeout,
        f"{host}: {unit} {prop} to become {value}",
        interval=0.5,
        detail=lambda: str(show(lab, host, unit, prop)),
    )


def test_hosts_are_booted_systemd_reached_over_ssh_with_pinned_keys(
    lab: Lab, systemd_hosts: list[SystemdHost]
) -> None:
    for host in systemd_hosts:
        state = lab.run(host.name, "systemctl is-system-running --wait; hostname", check=True)
        failed = lab.run(host.name, "systemctl --failed --no-pager --no-legend").stdout
        assert state.stdout.split() == ["running", host.name], f"failed units: {failed}"
        assert lab.run(host.name, "cat /proc/1/comm").stdout.strip() == "systemd"
    other_key = lab.known_hosts.with_name("other_known_hosts")
    lines = lab.known_hosts.read_text().splitlines()
    gpu, cpu = systemd_hosts[:2]
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


def test_gpu_hosts_have_their_gpu_and_the_cpu_host_none(
    lab: Lab, systemd_hosts: list[SystemdHost]
) -> None:
    assert [h.name for h in systemd_hosts] == ["rtx3090", "apu", "rtx5070"]
    for host, gpu in (("rtx3090", "RTX 3090"), ("rtx5070", "RTX 5070")):
        listed = lab.run(host, "nvidia-smi -L", check=True).stdout
        assert listed.startswith(f"GPU 0: NVIDIA GeForce {gpu} (UUID: GPU-"), listed
    memory = "nvidia-smi --query-gpu=memory.total --format=csv,noheader"
    assert lab.run("rtx5070", memory, check=True).stdout.strip() == "12227 MiB"
    assert lab.run("apu", "command -v nvidia-smi").returncode == 1


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
        wait_until(
            lambda: '"ok"' in lab.run(host, health).stdout,
            60,
            "the unit's llama-server to become healthy",
            interval=0.5,
        )
        lab.run(host, f"kill -9 {first['MainPID']}", check=True)
        wait_show(lab, host, UNIT, "NRestarts", "1")
        wait_show(lab, host, UNIT, "SubState", "running")
        assert show(lab, host, UNIT, "MainPID")["MainPID"] != first["MainPID"]
        journal = lab.run(host, f"journalctl -u {UNIT} --no-pager -o cat", check=True).stdout
        assert "srv  llama_server: listening on http://0.0.0.0:8090" in journal  # b11434
        assert "Main process exited, code=killed, status=9/KILL" in journal
    finally:
        lab.run(host, f"systemctl stop {UNIT}", check=True)
    assert show(lab, host, UNIT, "ActiveState")["ActiveState"] == "inactive"
    lab.run(host, f"rm /etc/systemd/system/{UNIT}.service && systemctl daemon-reload", check=True)


# -- seats as units, through the fleet command line --------------------------------------
GPU_SEAT = """host: rtx3090
gpus: [0]
engine: llama.cpp
image: /usr/local/bin/llama-server
model: /models/qwen3-8b-q4_k_m.gguf
served_name: coder
context: 8192
parallel: 2
port: 8071
"""
CPU_SEAT = """host: apu
gpus: []
engine: llama.cpp
image: /usr/local/bin/llama-server
model: /models/qwen3-0.6b-q4_k_m.gguf
served_name: small
context: 4096
parallel: 2
port: 8070
"""


def host_file(host: SystemdHost) -> str:
    gpus = "".join(
        f"\n  - {{index: {g.index}, name: {g.name}, memory: {g.memory_mib}MiB}}"
        for g in host.spec.gpus
    )
    head = f"ssh: {{alias: {host.name}}}\naddress: {host.address}\nruntime: systemd\n"
    return head + (f"gpus:{gpus}\n" if gpus else "gpus: []\n")


def systemd_repo(lab: Lab, hosts: list[SystemdHost], tmp_path: Path) -> FleetRepo:
    repo = make_repo(tmp_path, lab, seats=())
    for host in hosts:
        (repo.desired / "hosts" / f"{host.name}.yaml").write_text(host_file(host))
    (repo.desired / "seats" / "coder.yaml").write_text(GPU_SEAT)
    (repo.desired / "seats" / "small.yaml").write_text(CPU_SEAT)
    repo.commit("two seats as systemd units")
    return repo


def fleet_ok(repo: FleetRepo, *args: str) -> str:
    result = repo.fleet(*args)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def main_pid(lab: Lab, host: str, unit: str) -> str:
    return show(lab, host, unit, "MainPID")["MainPID"]


def test_seats_as_units_apply_change_roll_back_restart_drift_heal_and_remove(
    lab: Lab, systemd_hosts: list[SystemdHost], tmp_path: Path
) -> None:
    repo = systemd_repo(lab, systemd_hosts, tmp_path)
    out = fleet_ok(repo, "apply", "--auto-approve", "--timeout", "120")
    assert "seat coder healthy" in out and "seat small healthy" in out
    assert repo.fleet("plan").returncode == 0
    unit = lab.run("apu", "cat /etc/systemd/system/fleet-small.service", check=True).stdout
    assert "Restart=on-failure" in unit and 'Environment="CUDA_VISIBLE_DEVICES="' in unit
    seats = {
        s["seat"]: s
        for h in json.loads(fleet_ok(repo, "inventory", "--json"))["hosts"]
        for s in h["seats"]
    }
    assert (seats["coder"]["gpus"], seats["coder"]["kv_cache_tokens"]) == ([0], 16384)
    assert seats["coder"]["vram_mib"] > 0 and seats["small"]["gpus"] == []

    before = main_pid(lab, "apu", "fleet-small")
    repo.edit("seats/small.yaml", "context: 4096", "context: 2048")
    assert "replace seat small" in fleet_ok(repo, "apply", "--auto-approve", "--timeout", "120")
    assert main_pid(lab, "apu", "fleet-small") != before
    assert "--ctx-size 4096" in lab.run("apu", "systemctl show fleet-small -p ExecStart").stdout

    repo.edit("seats/small.yaml", "qwen3-0.6b-q4_k_m.gguf", "not-a-model.gguf")
    failed = repo.fleet("apply", "--auto-approve", "--timeout", "60")
    assert failed.returncode == 1 and "rolled back" in failed.stdout + failed.stderr
    assert (
        "qwen3-0.6b-q4_k_m.gguf"
        in lab.run("apu", "cat /etc/systemd/system/fleet-small.service").stdout
    )
    wait_show(lab, "apu", "fleet-small", "SubState", "running")
    repo.edit("seats/small.yaml", "not-a-model.gguf", "qwen3-0.6b-q4_k_m.gguf")
    assert repo.fleet("plan").returncode == 0

    lab.run("rtx3090", f"kill -9 {main_pid(lab, 'rtx3090', 'fleet-coder')}", check=True)
    wait_show(lab, "rtx3090", "fleet-coder", "NRestarts", "1")
    wait_show(lab, "rtx3090", "fleet-coder", "SubState", "running")
    assert "seat coder restarted 1 time by systemd" in fleet_ok(repo, "inventory")

    lab.run("apu", "sed -i 's/--port 8070/--port 8075/' /etc/systemd/system/fleet-small.service")
    drifted = repo.fleet("plan")
    assert drifted.returncode == 2 and "~ seat small on apu" in drifted.stdout
    healed = repo.fleet("reconcile", "--once", "--self-heal")
    assert healed.returncode == 0, healed.stdout + healed.stderr
    assert repo.fleet("plan").returncode == 0

    repo.remove("seats/small.yaml")
    assert "remove seat small" in fleet_ok(
        repo, "apply", "--auto-approve", "--prune", "--timeout", "120"
    )
    assert show(lab, "apu", "fleet-small", "LoadState")["LoadState"] == "not-found"
    assert lab.run("apu", "ls /etc/systemd/system/ | grep -c fleet-").stdout.strip() == "0"
    assert repo.fleet("plan").returncode == 0


SURGED_SEAT = """host: rtx3090
gpus: [0]
engine: llama.cpp
image: /usr/local/bin/llama-server
model: /models/qwen3-0.6b-q8_0.gguf
served_name: quick
context: 4096
parallel: 2
port: 8074
strategy: surge
aliases: [quick]
"""


def test_a_gpu_seat_surges_to_a_second_unit_under_client_load(
    lab: Lab, systemd_hosts: list[SystemdHost], tmp_path: Path
) -> None:
    repo = make_repo(tmp_path, lab, seats=())
    (repo.desired / "hosts" / "rtx3090.yaml").write_text(host_file(systemd_hosts[0]))
    (repo.desired / "seats" / "quick.yaml").write_text(SURGED_SEAT)
    repo.commit("a seat to surge, behind the gateway")
    try:
        fleet_ok(repo, "apply", "--auto-approve", "--timeout", "120")
        first = main_pid(lab, "rtx3090", "fleet-quick")
        repo.edit("seats/quick.yaml", "context: 4096", "context: 2048")
        with ClientLoad(lab.gateway_url, lab.master_key, ["quick"], max_seconds=300) as load:
            out = fleet_ok(repo, "apply", "--auto-approve", "--timeout", "120")
        report = load.report()
        assert "start quick-b on port 9074 beside quick" in out, out
        assert "drain seat quick on port 8074" in out
        line = report.aliases["quick"]
        assert line.total >= 8 and line.failed == 0, report.summary()
        assert show(lab, "rtx3090", "fleet-quick", "LoadState")["LoadState"] == "not-found"
        now = show(lab, "rtx3090", "fleet-quick-b", "SubState", "ExecStart", "MainPID")
        assert now["SubState"] == "running" and "--port 9074" in now["ExecStart"]
        assert now["MainPID"] != first
        assert repo.fleet("plan").returncode == 0
        status, body = chat(lab, "quick")
        assert status == 200, body
    finally:  # the seat's units go by hand: the module's other fleets do not name it
        for unit in ("fleet-quick", "fleet-quick-b"):
            lab.run("rtx3090", f"systemctl disable --now {unit}; rm -f {UNITS}/{unit}.service*")
        lab.run("rtx3090", "systemctl daemon-reload", check=True)


def test_import_adopts_a_hand_made_unit_in_place_then_a_change_takes_it_over(
    lab: Lab, systemd_hosts: list[SystemdHost], tmp_path: Path
) -> None:
    lab.run("apu", "cat > /etc/systemd/system/llama-server.service", input=HAND_MADE, check=True)
    lab.run("apu", "systemctl daemon-reload && systemctl enable --now llama-server", check=True)
    wait_show(lab, "apu", "llama-server", "SubState", "running")
    pid = main_pid(lab, "apu", "llama-server")
    repo = make_repo(tmp_path, lab, seats=())
    shutil.rmtree(repo.desired)
    imported = fleet_ok(repo, "import", "--host", "apu", "--out", "desired")
    host_text = (repo.desired / "hosts" / "apu.yaml").read_text()
    assert 'runtime: "systemd"' in host_text, imported + host_text
    repo.commit("imported")
    plan = repo.fleet("plan")
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert main_pid(lab, "apu", "llama-server") == pid

    (seat_file,) = (repo.desired / "seats").glob("*.yaml")
    repo.edit(f"seats/{seat_file.name}", "context: 4096", "context: 2048")
    out = fleet_ok(repo, "apply", "--auto-approve", "--timeout", "120")
    assert "remove hand-made container llama-server" in out
    taken = show(lab, "apu", "llama-server", "ActiveState", "UnitFileState")
    assert taken == {"ActiveState": "inactive", "UnitFileState": "disabled"}
    wait_show(lab, "apu", f"fleet-{seat_file.stem}", "SubState", "running")
    assert repo.fleet("plan").returncode == 0


VLLM_SEAT = """host: rtx3090
gpus: [0]
engine: vllm
image: /usr/local/bin/vllm
model: /models/TinyLlama-1.1B-Chat-FP8
served_name: tiny
context: 2048
gpu_memory_utilization: 0.1
concurrency_band: {min: 1.2, max: 64}
port: 8073
"""


def test_a_vllm_seat_runs_as_a_vllm_serve_unit(
    lab: Lab, systemd_hosts: list[SystemdHost], tmp_path: Path
) -> None:
    repo = make_repo(tmp_path, lab, seats=())
    (repo.desired / "hosts" / "rtx3090.yaml").write_text(host_file(systemd_hosts[0]))
    (repo.desired / "seats" / "tiny.yaml").write_text(VLLM_SEAT)
    gateway = repo.desired / "gateway.yaml"  # no alias: the gateway is left as it is
    gateway.write_text(re.sub(r"^retired_aliases:.*\n", "", gateway.read_text(), flags=re.M))
    repo.commit("a vLLM seat as a unit")
    assert "seat tiny healthy" in fleet_ok(repo, "apply", "--auto-approve", "--timeout", "120")
    shown = show(lab, "rtx3090", "fleet-tiny", "ExecStart", "SubState")
    assert "argv[]=/usr/local/bin/vllm serve /models/TinyLlama-1.1B-Chat-FP8 " in shown["ExecStart"]
    assert shown["SubState"] == "running" and repo.fleet("plan").returncode == 0
    repo.remove("seats/tiny.yaml")
    fleet_ok(repo, "apply", "--auto-approve", "--prune", "--timeout", "120")
    assert show(lab, "rtx3090", "fleet-tiny", "LoadState")["LoadState"] == "not-found"


# -- the llama.cpp example fleet (examples/llamacpp-fleet/desired/) ----------------------
# The lab's three systemd hosts are the example's: coder on rtx3090 and mid on rtx5070 as
# the example says; big runs qwen3-8b on apu, since this machine has no 64 GB for the 35B
# Q8_0 file.
LAB_EDITS = {
    "big.yaml": (("qwen3.5-35b-a3b-q8_0.gguf", "qwen3-8b-q4_k_m.gguf"),),
}


def example_repo(lab: Lab, hosts: list[SystemdHost], tmp_path: Path) -> FleetRepo:
    """The example's seats and fallbacks on the lab's systemd hosts and gateway."""
    repo = make_repo(tmp_path, lab, seats=())
    shutil.copyfile(EXAMPLE / "fleet.yaml", repo.desired / "fleet.yaml")  # its bands
    for host in hosts:
        (repo.desired / "hosts" / f"{host.name}.yaml").write_text(host_file(host))
    for seat_file in (EXAMPLE / "seats").glob("*.yaml"):
        text = seat_file.read_text()
        for old, new in LAB_EDITS.get(seat_file.name, ()):
            assert old in text, (seat_file.name, old)
            text = text.replace(old, new)
        (repo.desired / "seats" / seat_file.name).write_text(text)
    yaml = make_yaml()
    gateway = yaml.load((repo.desired / "gateway.yaml").read_text())
    gateway["fallbacks"] = yaml.load((EXAMPLE / "gateway.yaml").read_text())["fallbacks"]
    (repo.desired / "gateway.yaml").write_text(dump_yaml(gateway))
    repo.commit("the llama.cpp example fleet on the lab's systemd hosts")
    return repo


def test_the_llamacpp_example_fleet_applies_end_to_end_and_plans_zero(
    lab: Lab, systemd_hosts: list[SystemdHost], tmp_path: Path
) -> None:
    repo = example_repo(lab, systemd_hosts, tmp_path)
    out = fleet_ok(repo, "apply", "--auto-approve", "--timeout", "180")
    for seat in ("coder", "mid", "big"):
        assert f"seat {seat} healthy" in out, out
    plan = repo.fleet("plan")
    assert plan.returncode == 0, plan.stdout + plan.stderr
    argv = lab.run("rtx3090", "systemctl show fleet-coder -p ExecStart", check=True).stdout
    assert "gemma-3-27b-it-q4_k_m.gguf" in argv and "--parallel 2" in argv
    assert "--batch-size 4096" in argv
    seats = {
        s["seat"]: s
        for h in json.loads(fleet_ok(repo, "inventory", "--json"))["hosts"]
        for s in h["seats"]
    }
    placed = {n: (seats[n]["gpus"], seats[n]["vram_mib"] > 0) for n in ("coder", "mid", "big")}
    assert placed == {"coder": ([0], True), "mid": ([0], True), "big": ([], False)}
    tree = make_yaml().load(lab.gateway_config())
    section = tree.get("router_settings") or tree.get("litellm_settings") or {}
    assert {"coder": ["mid", "big"]} in section["fallbacks"]
    assert {"mid": ["big"]} in section["fallbacks"]
    status, body = chat(lab, "code")
    assert status == 200, body


def test_the_example_fleet_hands_coder_to_mid_while_coder_is_recreated_under_load(
    lab: Lab, systemd_hosts: list[SystemdHost], tmp_path: Path
) -> None:
    """The example's `fallbacks: {coder: [mid, big]}`: coder (its unit, pinned to
    recreate) changes while clients and long streams (one always in flight) run on `coder`
    and `mid`; plan says `mid` serves `coder` meanwhile, and not one request fails nor one
    stream is cut on either."""
    repo = example_repo(lab, systemd_hosts, tmp_path)
    fleet_ok(repo, "apply", "--auto-approve", "--timeout", "180")  # in sync after the above
    repo.edit("seats/coder.yaml", "context: 4096", "context: 2048\nstrategy: recreate")
    plan = repo.fleet("plan")
    (line,) = [x for x in plan.stdout.splitlines() if "~ seat coder: " in x]
    assert "; coder served by mid while it loads (last start took " in line, line
    assert line.endswith("; code unavailable"), line
    aliases = ["coder", "mid"]
    before = main_pid(lab, "rtx3090", "fleet-coder")
    started = time.monotonic()
    with (
        ClientLoad(lab.gateway_url, lab.master_key, aliases, max_seconds=600) as load,
        StreamLoad(lab.gateway_url, lab.master_key, aliases, max_tokens=150) as streams,
    ):
        wait_until(lambda: all(streams.in_flight.values()), 60, "a stream in flight on each")
        out = fleet_ok(repo, "apply", "--auto-approve", "--timeout", "180")
    print(f"handoff apply under load took {time.monotonic() - started:.1f} s")
    steps = ["hand off seat coder's aliases", "drain seat coder", "healthy", "hand coder back"]
    at = [out.find(step) for step in steps]
    assert -1 not in at and at == sorted(at), out
    assert main_pid(lab, "rtx3090", "fleet-coder") != before, "the unit was recreated"
    for report in (load.report(), streams.report()):
        print(report.summary())
        for alias in aliases:
            assert report.aliases[alias].total >= 2, report.summary()
            assert report.aliases[alias].failed == 0, report.summary()
    assert repo.fleet("plan").returncode == 0
