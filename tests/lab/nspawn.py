"""Real systemd hosts for the lab: Debian containers booted with systemd-nspawn.

A test that needs hosts running seats as systemd units asks for them (the module fixture
`systemd_hosts`, tests/lab/fixtures.py); `boot(lab)` adds them to a running lab and
`halt(lab)` removes them again (the lab's `down` also does, from its state file).

    rootfs   one minbase Debian tree, built once with mmdebstrap and cached in ROOTFS
             (about 60 s; systemd, dbus, openssh-server, python3, iproute2, procps)
    a host   `systemd-nspawn --boot` of that tree under an overlay of its own
             (<host>/overlay/upper, written before the boot: hostname, /etc/hosts,
             10-host0.network, sshd's drop-in with the host key, llama-server,
             nvidia-smi), with --network-veth: the container's host0 holds the host's
             address, the machine's side `ve-<machine>` the /25's first address
    address  in the lab's slot scheme: the host's /24 of 198.18.0.0/15 (slots.py),
             .1 on this machine's side, .2 the host; sshd on :2222, reached only over
             SSH with the lab's client key and the host's pinned host key

The rootfs and each host's layer are `tests.lab.nspawn_layer`'s. Inside, /models is the
host's models folder, the stand-in engine is the `vllm` package
(so `/usr/local/bin/llama-server` and `vllm` run it), and a GPU host has the simulated
driver's state at /run/fleet-lab-gpu and `nvidia-smi` on PATH: an engine started by a
unit sees the GPUs its CUDA_VISIBLE_DEVICES names (tests/lab/engine/gpu.py).
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from . import models, nspawn_cgroup, procs, sshcfg
from .bringup import port_open, procs_path, wait_for
from .hosts import LabHost, write_gpu_state
from .image import ENGINE_SRC
from .nspawn_diag import why_down
from .nspawn_layer import ensure_rootfs, write_layer
from .procs import LabError
from .spec import CPU_MODELS, RTX_3090, SSH_PORT, HostSpec, make_gpus
from .state import LabState

RTX_5070 = "NVIDIA GeForce RTX 5070"

if TYPE_CHECKING:
    from .lab import Lab

SITE = "/usr/local/lib/python3.11/dist-packages/vllm"
GPU_MODELS = (
    "qwen3-8b-q4_k_m.gguf",
    "qwen3-0.6b-q8_0.gguf",
    "not-a-model.gguf",
    "gemma-3-27b-it-q4_k_m.gguf",  # the llama.cpp example fleet's coder
    "TinyLlama-1.1B-Chat-FP8",  # for `vllm serve` as a unit
)
RTX_5070_MODELS = ("gemma-3-12b-it-q4_k_m.gguf", "qwen3-0.6b-q8_0.gguf")  # the example's mid
APU_MODELS = (*CPU_MODELS, "qwen3-8b-q4_k_m.gguf")  # the example's big, made to fit here
ROLE = "nspawn"
INIT_ROLE = "nspawn-init"  # the container's pid 1, recorded beside its nspawn
# Seconds this machine waits before it brings its end of a host's veth up: 0, but for
# tests.lab.nspawn_soak --late-link, which plays a busy machine that comes late
LATE_LINK = 0.0


def specs() -> tuple[HostSpec, ...]:
    """The GPU hosts (one RTX 3090; one RTX 5070, 12 GB) and the CPU-only host that run
    seats as units: the llama.cpp example fleet's three."""
    rtx3090 = make_gpus("rtx3090", RTX_3090, 24576, 1)
    rtx5070 = make_gpus("rtx5070", RTX_5070, 12227, 1)
    return (
        HostSpec("rtx3090", "127.0.0.15", 5, rtx3090, "runtime", GPU_MODELS, image_tags=()),
        HostSpec("apu", "127.0.0.16", 6, models=APU_MODELS, image_tags=()),
        HostSpec("rtx5070", "127.0.0.17", 7, rtx5070, "runtime", RTX_5070_MODELS, image_tags=()),
    )


@dataclass(frozen=True)
class SystemdHost(LabHost):
    """A lab host that is a booted container: its own network namespace and address."""

    @property
    def address(self) -> str:
        """host0's address: .2 of the host's /24 in the lab's block."""
        return str(self.slot.host_net(self.spec.number).network_address + 2)

    @property
    def machine_side(self) -> str:
        """This machine's end of the veth pair, with its /25."""
        return f"{self.slot.host_net(self.spec.number).network_address + 1}/25"

    @property
    def machine(self) -> str:
        """The container's machine name (unique on the machine: it carries the slot)."""
        return f"f{self.slot.index}-{self.name}"

    @property
    def veth(self) -> str:
        """What nspawn names this machine's end of the veth pair."""
        return f"ve-{self.machine}"[:15]

    @property
    def upper(self) -> Path:
        """The host's own layer over the shared rootfs."""
        return self.root / "overlay" / "upper"


def nspawn_command(lab: Lab, host: SystemdHost, rootfs: Path) -> list[str]:
    """systemd-nspawn booting the host (flags as measured in LAB-NOTES)."""
    binds = [
        f"--bind={host.models_dir}:/models",
        f"--bind-ro={ENGINE_SRC}:{SITE}",
        f"--bind-ro={lab.root / 'runtime'}:/opt/fleet-lab/runtime",
    ]
    if host.spec.gpus:
        binds.append(f"--bind={host.gpu_dir}:/run/fleet-lab-gpu")
    return [
        "systemd-nspawn",
        "--boot",
        "--register=no",
        "--keep-unit",
        "--resolv-conf=off",
        "--console=read-only",
        f"--machine={host.machine}",
        f"--directory={rootfs}",
        f"--overlay={rootfs}:{host.upper}:/",
        "--network-veth",
        *binds,
    ]


# -- life cycle ---------------------------------------------------------------------------
def boot(lab: Lab) -> list[SystemdHost]:
    """Boot the lab's systemd hosts (added to `lab.hosts`, its SSH files and its state)."""
    rootfs = ensure_rootfs()
    hosts = [SystemdHost(s, lab.root / "hosts" / s.name, lab.slot) for s in specs()]
    try:
        for host in hosts:
            lab.hosts[host.name] = host
            prepare(lab, host)
        write_client_files(lab)
        inits = {host.name: start(lab, host, rootfs) for host in hosts}
        for host in hosts:
            finish(host, inits[host.name])
    except BaseException:
        halt(lab, hosts)  # a host that did not come up leaves nothing in the lab
        raise
    return hosts


def running(lab: Lab) -> list[SystemdHost]:
    """The systemd hosts the lab's state records as booted (by `up --systemd` in another
    process, say), added to `lab.hosts`."""
    records = LabState.load(lab.state.path).procs
    booted = {r.host for r in records if r.role == ROLE and procs.is_ours(r)}
    hosts = [SystemdHost(s, lab.root / "hosts" / s.name, lab.slot) for s in specs()]
    hosts = [h for h in hosts if h.name in booted]
    for host in hosts:
        lab.hosts[host.name] = host
    return hosts


def prepare(lab: Lab, host: SystemdHost) -> None:
    """Record the host, then its folders, models, host key and layer."""
    with lab.state.lock:
        lab.state.hosts[host.name] = {
            "root": str(host.root),
            "run_dir": str(host.run_dir),
            "cgroup": host.machine,  # its own cgroup (nspawn_cgroup), for `down`
        }
    lab.state.add("bridge", host.veth)
    for sub in ("models", "logs", "srv-fleet"):  # srv-fleet: so lab.reset() finds it
        (host.root / sub).mkdir(parents=True, exist_ok=True)
    host.run_dir.mkdir(parents=True, exist_ok=True)
    write_gpu_state(host)
    models.populate(host.models_dir, host.spec.models, lab.corpus)
    sshcfg.keygen(host.root / "ssh_host_ed25519_key", f"root@{host.name}")
    write_layer(lab, host)


def write_client_files(lab: Lab) -> None:
    """ssh_config and known_hosts for every host of the lab (here and in lab.home)."""
    hosts = tuple(lab.hosts.values())
    lines = [
        sshcfg.known_hosts_line(h, (h.root / "ssh_host_ed25519_key.pub").read_text().strip())
        for h in hosts
    ]
    lab.known_hosts.write_text("\n".join(lines) + "\n")
    lab.ssh_config.write_text(sshcfg.client_config(hosts, lab.client_key, lab.known_hosts))
    shutil.copyfile(lab.ssh_config, lab.home / ".ssh" / "config")
    shutil.copyfile(lab.known_hosts, lab.home / ".ssh" / "known_hosts")


def start(lab: Lab, host: SystemdHost, rootfs: Path) -> int:
    """Start nspawn (recorded with the container's mount namespace), address the veth;
    the container's pid 1 (as this machine numbers it)."""
    env = {"PATH": procs_path(), "LANG": "C.UTF-8", "SYSTEMD_NSPAWN_LOCK": "0"}
    log = host.root / "logs" / "nspawn.log"
    command = nspawn_cgroup.started_in(
        nspawn_cgroup.make(host.machine), nspawn_command(lab, host, rootfs)
    )
    record, proc = procs.spawn(ROLE, host.name, command, log, env)
    lab.children.append(proc)
    lab.state.add_proc(record)
    wait_for(f"{host.veth} of {host.name} (see {log})", lambda: link_exists(host.veth), 30)
    time.sleep(LATE_LINK)
    procs.run(["ip", "addr", "add", host.machine_side, "dev", host.veth])
    procs.run(["ip", "link", "set", host.veth, "up"])  # host0 gets its carrier, then its address
    leader = container_init(record.pid)
    namespace = procs.mount_namespace(leader) if leader else None
    if leader is None or namespace is None:
        raise LabError(f"no init of {host.name} under nspawn {record.pid}; see {log}")
    lab.state.add_proc(record, namespace)
    lab.state.add_proc(
        procs.ProcRecord(INIT_ROLE, host.name, leader, procs.start_time(leader) or 0)
    )
    return leader


def finish(host: SystemdHost, init_pid: int) -> None:
    """Wait until the host's sshd answers; else fail saying why, as the host tells it
    (the failing unit and its status lines, tests.lab.nspawn_diag)."""
    log = host.root / "logs" / "nspawn.log"
    try:
        wait_for(f"sshd of {host.name} (see {log})", lambda: port_open(host.address, SSH_PORT), 60)
    except LabError as err:
        raise LabError(f"{err}\n{why_down(init_pid, log)}") from None


def link_exists(name: str) -> bool:
    """Is there a network interface of that name on this machine?"""
    return Path(f"/sys/class/net/{name}").exists()


def container_init(nspawn_pid: int, timeout: float = 10.0) -> int | None:
    """The container's pid 1 (as this machine numbers it): nspawn's descendant whose
    innermost pid is 1."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and is_init_under(int(entry.name), nspawn_pid):
                return int(entry.name)
        time.sleep(0.05)
    return None


def is_init_under(pid: int, ancestor: int) -> bool:
    """Is `pid` pid 1 of a namespace and a descendant of `ancestor`?"""
    status = read(f"/proc/{pid}/status")
    nspid = next((ln.split()[1:] for ln in status.splitlines() if ln.startswith("NSpid:")), [])
    if len(nspid) < 2 or nspid[-1] != "1":
        return False
    fields = procs.stat_fields(pid)
    while fields:
        parent = int(fields[1])
        if parent == ancestor:
            return True
        fields = procs.stat_fields(parent) if parent > 1 else None
    return False


def read(path: str) -> str:
    """A /proc file, '' when gone."""
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def halt(lab: Lab, hosts: list[SystemdHost]) -> None:
    """Power the hosts off (nspawn's SIGTERM), take them out of the lab's files and
    remove their overlays and run dirs (/run/fleet-lab/<slot>/<host>).

    A container still there 15 s after its nspawn's SIGTERM is stuck in its shutdown
    (seen: `Failed to start systemd-halt.service`, then nothing). A second SIGTERM makes
    nspawn kill it at once; a SIGKILL to nspawn instead left its pid 1 running, with
    the shared rootfs under its overlay while the overlay's upper directory was removed.
    So last, a pid 1 (recorded as INIT_ROLE) that outlived its nspawn gets a SIGKILL,
    which ends its whole pid namespace, and so its mounts.
    """
    names = {h.name for h in hosts}
    mine = [r for r in lab.state.procs if r.role in (ROLE, INIT_ROLE) and r.host in names]
    nspawns = [r.pid for r in mine if r.role == ROLE and procs.is_ours(r)]
    for pid in nspawns:
        procs.send(pid, signal.SIGTERM)
    procs.stop(procs.wait_gone(nspawns, 15.0), timeout=5.0)
    procs.stop([r.pid for r in mine if r.role == INIT_ROLE and procs.is_ours(r)], timeout=0.0)
    for child in lab.children:
        child.poll()  # reap the nspawns that exited: no zombie per boot until the lab's down
    with lab.state.lock:
        lab.state.procs = [r for r in lab.state.procs if r not in mine]
        for name in names:
            lab.state.hosts.pop(name, None)
        lab.state.save()
    for name in names:
        lab.hosts.pop(name, None)
    write_client_files(lab)
    for host in hosts:  # what prepare() made for it, by its own paths
        subprocess.run(["ip", "link", "delete", host.veth], capture_output=True)
        shutil.rmtree(host.root / "overlay", ignore_errors=True)
        shutil.rmtree(host.run_dir, ignore_errors=True)
        nspawn_cgroup.remove(host.machine)
