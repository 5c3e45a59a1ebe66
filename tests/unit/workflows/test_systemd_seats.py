"""Seats as systemd units on fake hosts: the llama.cpp example fleet
(examples/llamacpp-fleet/desired/) through the real command line.

The fake hosts answer systemctl, journalctl and the fact script as the lab's real systemd
hosts did when recorded (tests/fakes/units.py, tests/corpus/systemd/): apply writes each
unit, reloads systemd and starts it, the health gate reads its process and endpoints,
a failing start rolls back to the previous unit, a removed seat is drained then disabled,
`${VAR}` values go to a 0600 EnvironmentFile only, a hand edit is drift that the next
apply (what `reconcile --self-heal` runs) restores, and systemd's own restarts are a
finding. What needs a real systemd (Restart=on-failure after kill -9, boot, SSH, the
loop's own connections) stays in tests/integration/test_systemd.py. The reconcile loop's
watchdog restarts a stuck unit through the runtime adapter (`systemctl restart`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fleet.facts.engine_metrics import EngineLoad
from fleet.plan.reconcile import LoadSample
from fleet.spec.models import ReconcileSettings
from reconciler.workflows.observe import observe_fleet
from reconciler.workflows.reconcile import LoopOptions, Reconciler
from reconciler.workflows.repo import FleetRepo
from tests.fakes import containers
from tests.fakes.gateway import FakeGateway
from tests.fakes.host import FakeHost, FakeSessions
from tests.fakes.units import gguf_file, kill9
from tests.unit.cli.fake_fleet import GATEWAY_CONFIG, MASTER_KEY, FakeFleet, make_fleet
from tests.unit.workflows.test_watchdog import Said

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "llamacpp-fleet" / "desired"
UNITS = "/etc/systemd/system"
CODER, BIG = f"{UNITS}/fleet-coder.service", f"{UNITS}/fleet-big.service"


MEMINFO = "MemTotal:       65536000 kB\nMemFree:        60000000 kB\nMemAvailable:   62000000 kB"
MODELS = {
    "rtx3090": "gemma-3-27b-it-q4_k_m.gguf",
    "rtx5070": "gemma-3-12b-it-q4_k_m.gguf",
    "apu": "qwen3.5-35b-a3b-q8_0.gguf",
}


def hosts() -> dict[str, FakeHost]:
    """The example's hosts, each with its GGUF model (a real header)."""
    made = {
        name: FakeHost(
            name, gpus=0 if name == "apu" else 1, docker=False, ggufs={f"/models/{m}": gguf_file(m)}
        )
        for name, m in MODELS.items()
    }
    made["apu"].files["/proc/meminfo"] = MEMINFO
    return {**made, "gateway": FakeHost("gateway", gpus=0)}


@pytest.fixture
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeFleet:
    """The llama.cpp example fleet, its LiteLLM proxy (restarted by `systemctl restart
    litellm`, as its gateway.yaml says) already routing every alias."""
    for name, value in MASTER_KEY.items():
        monkeypatch.setenv(name, value)
    # GPUs of the example's size (the RTX 3090's 24 GiB): no room for a second copy of the
    # coder, which recreates as on the real card
    monkeypatch.setattr(containers, "GPU_MIB", 24576)
    fake = make_fleet(tmp_path, seats=None, source=EXAMPLE, hosts=hosts())
    fake.route_gateway()
    gateway = fake.load().gateway
    assert gateway is not None
    proxy = FakeGateway(gateway, fake.hosts["gateway"].files[GATEWAY_CONFIG], fake.clock, 4000)
    proxy.address, proxy.host.gpus = "192.168.10.30", 0
    proxy.host.commands["systemctl restart litellm"] = proxy.restart
    proxy.refresh()
    fake.hosts["gateway"] = proxy.host
    return fake


def ok(fake: FakeFleet, *args: str) -> str:
    result = fake.fleet(*args)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def apply(fake: FakeFleet, *args: str) -> str:
    return ok(fake, "apply", "--auto-approve", "--timeout", "60", *args)


def commands(host: FakeHost) -> list[str]:
    return [detail for kind, detail in host.journal if kind == "exec" and detail != "sh -s"]


def test_apply_writes_each_unit_reloads_starts_it_and_plans_zero(fleet: FakeFleet) -> None:
    out = apply(fleet)
    assert "Applied: 3 to create" in out
    for seat in ("coder", "mid", "big"):
        assert f"seat {seat} healthy" in out
    gpu, cpu = fleet.hosts["rtx3090"], fleet.hosts["apu"]
    assert gpu.started == ["fleet-coder.service"] and cpu.started == ["fleet-big.service"]
    unit = gpu.files[CODER]
    model = "--model /models/gemma-3-27b-it-q4_k_m.gguf"
    assert f"ExecStart=/usr/local/bin/llama-server {model}" in unit
    assert "--parallel 2 --n-gpu-layers 999 --metrics --batch-size 4096" in unit
    assert 'Environment="CUDA_VISIBLE_DEVICES=0"' in unit and "Restart=on-failure" in unit
    assert 'Environment="CUDA_VISIBLE_DEVICES="' in cpu.files[BIG], "a CPU seat sees no GPU"
    ran = commands(gpu)
    reload_at = next(i for i, c in enumerate(ran) if c.endswith("systemctl daemon-reload"))
    start_at = ran.index(
        "systemctl enable fleet-coder.service 2>&1 && systemctl restart fleet-coder.service"
    )
    assert reload_at < start_at
    assert fleet.fleet("plan").returncode == 0
    inventory = ok(fleet, "inventory")  # each GGUF header read: architecture, layers
    assert "| `coder` | coder (/models/gemma-3-27b-it-q4_k_m.gguf) | gemma3 | 62 |" in inventory
    assert "| `big` | big (/models/qwen3.5-35b-a3b-q8_0.gguf) | qwen35moe | 40 |" in inventory


def test_a_change_restarts_only_its_unit_keeping_the_previous_one(fleet: FakeFleet) -> None:
    apply(fleet)
    gpu = fleet.hosts["rtx3090"]
    before, pid = gpu.files[CODER], gpu.systemd.units["fleet-coder.service"].pid
    fleet.edit("seats/coder.yaml", '--batch-size, "4096"', '--batch-size, "2048"')
    assert "replace seat coder" in apply(fleet)
    assert gpu.files[CODER + ".prev"] == before
    assert gpu.files[CODER].count("--batch-size 2048") == 1
    assert gpu.systemd.units["fleet-coder.service"].pid != pid
    assert fleet.hosts["apu"].started == ["fleet-big.service"], "no other unit moved"
    assert fleet.fleet("plan").returncode == 0


def test_a_failing_start_rolls_back_to_the_previous_unit(fleet: FakeFleet) -> None:
    apply(fleet)
    cpu = fleet.hosts["apu"]
    before = cpu.files[BIG]
    fleet.edit("seats/big.yaml", "parallel: 1", "parallel: 2")
    cpu.crashes["big"] = "gguf_init_from_file_impl: invalid magic characters: '<!DO'"
    failed = fleet.fleet("apply", "--auto-approve", "--timeout", "30")
    assert failed.returncode == 1
    assert "rolled back" in failed.stdout + failed.stderr
    assert cpu.files[BIG] == before
    assert cpu.systemd.loaded["fleet-big.service"] == before, "systemd reloaded the old unit"
    assert cpu.systemd.units["fleet-big.service"].running
    assert cpu.started == ["fleet-big.service"] * 3  # created, the failed change, rollback


def test_a_removed_seat_is_drained_then_its_unit_disabled_and_deleted(fleet: FakeFleet) -> None:
    apply(fleet)
    cpu = fleet.hosts["apu"]
    (fleet.desired / "seats" / "big.yaml").unlink()
    fleet.edit("gateway.yaml", "  coder: [mid, big]\n  mid: [big]\n", "  coder: [mid]\n")
    out = apply(fleet, "--prune")
    assert "remove seat big" in out
    ran = commands(cpu)
    drained = next(i for i, c in enumerate(ran) if "MainPID" in c)
    disabled = ran.index("systemctl disable --now fleet-big.service 2>&1")
    assert drained < disabled, "the drain found the engine's port before the unit stopped"
    assert BIG not in cpu.files and BIG + ".prev" not in cpu.files
    assert cpu.removed == ["fleet-big.service"]
    assert not cpu.systemd.units["fleet-big.service"].running
    assert fleet.fleet("plan").returncode == 0


def test_secrets_go_to_a_0600_environment_file_and_never_into_the_unit(
    fleet: FakeFleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_s3cret")
    fleet.edit(
        "seats/coder.yaml",
        "port: 8081",
        "port: 8081\nenv: {HF_TOKEN: '${HF_TOKEN}', LLAMA_ARG_THREADS: '8'}",
    )
    apply(fleet)
    gpu = fleet.hosts["rtx3090"]
    env_file = "/etc/fleet/fleet-coder.env"
    assert gpu.files[env_file].splitlines()[1:] == ['HF_TOKEN="hf_s3cret"']
    assert gpu.modes[env_file] == 0o600
    unit = gpu.files[CODER]
    assert "hf_s3cret" not in unit and f"EnvironmentFile={env_file}" in unit
    assert 'Environment="LLAMA_ARG_THREADS=8"' in unit
    assert "hf_s3cret" not in ok(fleet, "plan") + ok(fleet, "inventory")


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda t: t.replace("--port 8081", "--port 8089"), id="edited-and-reloaded"),
        pytest.param(lambda t: t + "# tuned by hand\n", id="edited-not-reloaded"),
    ],
)
def test_a_hand_edit_is_drift_that_apply_restores(fleet: FakeFleet, edit: object) -> None:
    apply(fleet)
    gpu = fleet.hosts["rtx3090"]
    written = gpu.files[CODER]
    gpu.files[CODER] = edit(written)  # type: ignore[operator]
    if "8089" in gpu.files[CODER]:
        gpu.systemd.reload(gpu.files)
    drifted = fleet.fleet("plan")
    assert drifted.returncode == 2 and "~ seat coder on rtx3090" in drifted.stdout
    assert "replace seat coder" in apply(fleet)  # what --self-heal applies
    assert gpu.files[CODER] == written and gpu.systemd.loaded["fleet-coder.service"] == written
    assert fleet.fleet("plan").returncode == 0


def test_restarts_by_systemd_are_a_finding_not_drift(fleet: FakeFleet) -> None:
    apply(fleet)
    kill9(fleet.hosts["rtx3090"], "fleet-coder")
    kill9(fleet.hosts["rtx3090"], "fleet-coder")
    assert "seat coder restarted 2 times by systemd" in ok(fleet, "inventory")
    assert fleet.fleet("plan").returncode == 0


def test_the_watchdog_restarts_a_stuck_unit_through_systemctl(fleet: FakeFleet) -> None:
    apply(fleet)
    desired = fleet.load()
    reconcile = ReconcileSettings(stuck_after=60)
    settings = desired.settings.model_copy(update={"reconcile": reconcile})
    desired = desired.model_copy(update={"settings": settings})
    said = Said()
    loop = Reconciler(Path("desired"), LoopOptions(), said)
    busy = EngineLoad(running=2, waiting=1, generated=500)
    loop.watchdog.samples["coder"] = [LoadSample(at, busy) for at in (-200.0, -100.0, -1.0)]
    sessions = FakeSessions(fleet.hosts)
    gpu = fleet.hosts["rtx3090"]
    pid = gpu.systemd.units["fleet-coder.service"].pid
    observation = observe_fleet(desired, sessions)
    loop._watchdog(FleetRepo(Path("desired"), desired, []), sessions, observation, hold=None)  # type: ignore[arg-type]
    assert ("systemctl-restart", "fleet-coder.service") in gpu.journal
    assert gpu.systemd.units["fleet-coder.service"].pid != pid
    assert said.events[0][0] == "watchdog-restart" and said.events[0][1]["seat"] == "coder"
    assert fleet.fleet("plan").returncode == 0, "restarted in place, its unit unchanged"


VLLM_HOST = """ssh: {alias: vllmbox}
address: 192.168.10.34
runtime: systemd
gpus:
  - {index: 0, name: NVIDIA GeForce RTX 3090, memory: 24576MiB}
"""
VLLM_SEAT = """host: vllmbox
gpus: [0]
engine: vllm
image: /opt/vllm/bin/vllm
model: /models/Llama-3.1-8B-Instruct
served_name: llama8b
context: 16384
gpu_memory_utilization: 0.9
port: 8090
"""


def test_a_vllm_seat_runs_as_a_vllm_serve_unit(fleet: FakeFleet) -> None:
    fleet.hosts["vllmbox"] = FakeHost("vllmbox", gpus=1, docker=False)
    (fleet.desired / "hosts" / "vllmbox.yaml").write_text(VLLM_HOST)
    (fleet.desired / "seats" / "llama8b.yaml").write_text(VLLM_SEAT)
    fleet.commit("a vLLM seat outside containers")
    out = apply(fleet)
    assert "seat llama8b healthy: serves llama8b" in out
    host = fleet.hosts["vllmbox"]
    unit = host.files[f"{UNITS}/fleet-llama8b.service"]
    (exec_start,) = [ln for ln in unit.splitlines() if ln.startswith("ExecStart=")]
    served = "ExecStart=/opt/vllm/bin/vllm serve /models/Llama-3.1-8B-Instruct "
    assert exec_start.startswith(served)
    assert "--served-model-name llama8b" in exec_start and "--port 8090" in exec_start
    assert host.systemd.units["fleet-llama8b.service"].argv[:2] == ["/opt/vllm/bin/vllm", "serve"]
    assert fleet.fleet("plan").returncode == 0


CODER_B = f"{UNITS}/fleet-coder-b.service"
ENV_FILE = "/etc/fleet/fleet-coder.env"


def surging(fleet: FakeFleet, monkeypatch: pytest.MonkeyPatch) -> FakeHost:
    """coder pinned to surge, with a `${VAR}` secret, applied; its host."""
    monkeypatch.setenv("HF_TOKEN", "hf_s3cret")
    fleet.edit(
        "seats/coder.yaml",
        "port: 8081",
        "port: 8081\nstrategy: surge\nenv: {HF_TOKEN: '${HF_TOKEN}'}",
    )
    apply(fleet)
    return fleet.hosts["rtx3090"]


def test_a_surge_starts_a_second_unit_on_the_second_port_then_drains_the_first(
    fleet: FakeFleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    gpu = surging(fleet, monkeypatch)
    fleet.edit("seats/coder.yaml", '--batch-size, "4096"', '--batch-size, "2048"')
    assert "seat coder: surge (strategy: surge in desired/)" in fleet.fleet("plan").stdout
    out = apply(fleet)
    assert "start coder-b on port 9081 beside coder" in out
    assert "seat coder healthy on port 9081" in out and "drain seat coder on port 8081" in out
    ran = commands(gpu)
    started = ran.index(
        "systemctl enable fleet-coder-b.service 2>&1 && systemctl restart fleet-coder-b.service"
    )
    assert started < ran.index("systemctl disable --now fleet-coder.service 2>&1")
    assert CODER not in gpu.files and "--port 9081" in gpu.files[CODER_B]
    assert f"EnvironmentFile={ENV_FILE}" in gpu.files[CODER_B], "the one secrets file"
    assert gpu.modes[ENV_FILE] == 0o600 and "hf_s3cret" in gpu.files[ENV_FILE]
    assert gpu.systemd.units["fleet-coder-b.service"].running
    assert not gpu.systemd.units["fleet-coder.service"].running
    assert fleet.hosts["gateway"].files[GATEWAY_CONFIG].count(":9081/v1") == 2  # coder, code
    assert fleet.fleet("plan").returncode == 0
    assert "# /etc/systemd/system/fleet-coder-b.service\n" in ok(fleet, "render", "rtx3090")
    fleet.edit("seats/coder.yaml", '--batch-size, "2048"', '--batch-size, "1024"')
    assert "start coder on port 8081 beside coder-b" in apply(fleet), "the next surge goes back"
    assert CODER_B not in gpu.files and "--port 8081" in gpu.files[CODER]
    assert ENV_FILE in gpu.files and fleet.fleet("plan").returncode == 0


def test_a_removed_surged_seat_takes_its_secrets_file_with_its_last_unit(
    fleet: FakeFleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    gpu = surging(fleet, monkeypatch)
    fleet.edit("seats/coder.yaml", '--batch-size, "4096"', '--batch-size, "2048"')
    apply(fleet)
    (fleet.desired / "seats" / "coder.yaml").unlink()
    fleet.edit("gateway.yaml", "  coder: [mid, big]\n  mid: [big]\n", "  mid: [big]\n")
    assert "remove seat coder" in apply(fleet, "--prune")
    assert gpu.removed[-1] == "fleet-coder-b.service"
    assert not [p for p in gpu.files if "fleet-coder" in p], "units, .prev and secrets gone"
    assert fleet.fleet("plan").returncode == 0


def test_a_surge_whose_new_unit_fails_removes_it_and_the_old_keeps_serving(
    fleet: FakeFleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    gpu = surging(fleet, monkeypatch)
    before, pid = gpu.files[CODER], gpu.systemd.units["fleet-coder.service"].pid
    fleet.edit("seats/coder.yaml", '--batch-size, "4096"', '--batch-size, "2048"')
    gpu.crashes["coder-b"] = "gguf_init_from_file_impl: failed to read magic"
    failed = fleet.fleet("apply", "--auto-approve", "--timeout", "30")
    assert failed.returncode == 1
    said = failed.stdout + failed.stderr
    assert "the new copy coder-b on port 9081 is removed" in said and "rolled back" in said
    assert CODER_B not in gpu.files and gpu.files[CODER] == before
    assert gpu.systemd.units["fleet-coder.service"].pid == pid, "the old copy never stopped"
    assert not gpu.systemd.units["fleet-coder-b.service"].running
    assert ENV_FILE in gpu.files
    assert fleet.fleet("plan").returncode == 2, "the change is still to do"
