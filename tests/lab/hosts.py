"""One simulated host on this machine: its folders, launchers and daemons.

Layout under `<lab>/hosts/<name>/`: models/ (its /models), srv-fleet/ (its /srv/fleet),
etc-litellm/ (gateway: its /etc/litellm), gpu/ (the simulated driver state), bin/ (what
its SSH sessions find on PATH: docker, nvidia-smi, fleet-gateway-restart),
daemon-bin/ (what its dockerd finds: the GPU runtime wrapper and hook), docker/ (the
engine's data root), logs and SSH host key. Where the host is on the machine follows
from the lab's slot (tests/lab/slots.py): its address, bridge, address pool and
/run/fleet-lab/<slot>/<name>/ for sockets and pid files.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from .slots import LabSlot
from .spec import HostSpec

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class LabHost:
    """A simulated host, as tests and the lab see it."""

    spec: HostSpec
    root: Path  # its folder on this machine
    slot: LabSlot  # its lab's slot

    @property
    def name(self) -> str:
        """The host name `desired/` uses (and the ssh_config alias)."""
        return self.spec.name

    @property
    def address(self) -> str:
        """Its loopback address in this lab (sshd, published seat ports, the proxy)."""
        return self.slot.address(self.spec.address)

    @property
    def bridge(self) -> str:
        """The kernel bridge of its engine's default network (<= 15 chars)."""
        return self.slot.bridge(self.name)

    @property
    def bridge_cidr(self) -> str:
        """The bridge's address (the engine's default network)."""
        return self.slot.bridge_cidr(self.spec.number)

    @property
    def pool(self) -> str:
        """The subnet its engine carves compose networks from (CIDR)."""
        return str(self.slot.pool(self.spec.number))

    @property
    def run_dir(self) -> Path:
        """Sockets and pid files."""
        return self.slot.run_dir / self.name

    @property
    def docker_host(self) -> str:
        """unix:// URL of this host's Docker engine (for test set-up)."""
        return f"unix://{self.run_dir / 'docker.sock'}"

    @property
    def models_dir(self) -> Path:
        """What the host sees as /models."""
        return self.root / "models"

    @property
    def compose_dir(self) -> Path:
        """What the host sees as /srv/fleet."""
        return self.root / "srv-fleet"

    @property
    def gpu_dir(self) -> Path:
        """The simulated driver's state (gpus.json, usage/, driver-gone)."""
        return self.root / "gpu"

    @property
    def bin_dir(self) -> Path:
        """Prepended to PATH in the host's SSH sessions."""
        return self.root / "bin"

    @property
    def daemon_bin(self) -> Path:
        """Prepended to PATH of the host's dockerd."""
        return self.root / "daemon-bin"

    def session_env(self) -> dict[str, str]:
        """Environment of the host's SSH sessions."""
        return {
            "DOCKER_HOST": self.docker_host,
            "PATH": f"{self.bin_dir}:{SYSTEM_PATH}",
            "FLEET_LAB_HOST": self.name,
        }


def write_script(path: Path, text: str) -> None:
    """An executable shell script."""
    path.write_text(text)
    path.chmod(0o755)


def real_runc() -> str:
    """The system runc the wrapper hands over to."""
    found = shutil.which("runc", path=SYSTEM_PATH)
    if not found:
        raise FileNotFoundError("runc not found: run tests/lab/install.sh")
    return found


def write_gpu_state(host: LabHost) -> None:
    """gpus.json and an empty usage/ for the host's simulated cards."""
    host.gpu_dir.mkdir(parents=True, exist_ok=True)
    (host.gpu_dir / "usage").mkdir(exist_ok=True)
    table = [
        {"index": g.index, "name": g.name, "memory_mib": g.memory_mib, "uuid": g.uuid}
        for g in host.spec.gpus
    ]
    (host.gpu_dir / "gpus.json").write_text(json.dumps(table, indent=1))


def write_daemon_bin(host: LabHost, runtime_dir: Path) -> None:
    """runc / nvidia-container-runtime wrappers and the no-op toolkit hook."""
    host.daemon_bin.mkdir(parents=True, exist_ok=True)
    runc = real_runc()
    tool = runtime_dir / "gpu_runtime.py"
    for name, mode in (("runc", "runc"), ("nvidia-container-runtime", "nvidia")):
        wrapped = (
            f"exec /usr/bin/python3 -E -s {tool} --mode {mode} --gpu-dir {host.gpu_dir} "
            f'--runc {runc} -- "$@"'
        )
        write_script(
            host.daemon_bin / name,
            (
                "#!/bin/sh\n# fleet lab: hands simulated GPUs to containers, then runs runc.\n"
                f'for a in "$@"; do case "$a" in create|run|delete) {wrapped};; esac; done\n'
                f'exec {runc} "$@"\n'
            ),
        )
    write_script(
        host.daemon_bin / "nvidia-container-runtime-hook",
        "#!/bin/sh\n# fleet lab: no-op NVIDIA hook (dockerd registers its nvidia "
        "driver when this exists)\ncat >/dev/null\nexit 0\n",
    )


def write_session_bin(host: LabHost, runtime_dir: Path) -> None:
    """What the host's SSH sessions find first on PATH."""
    host.bin_dir.mkdir(parents=True, exist_ok=True)
    docker = host.bin_dir / "docker"
    docker.unlink(missing_ok=True)
    docker.symlink_to("/usr/bin/docker")
    if host.spec.gpus:
        write_script(
            host.bin_dir / "nvidia-smi",
            (
                f"#!/bin/sh\nFLEET_LAB_GPU_DIR={host.gpu_dir} exec /usr/bin/python3 -E -s "
                f'{runtime_dir / "nvidia_smi.py"} "$@"\n'
            ),
        )
    if host.spec.gateway:
        for name in ("fleet-gateway-restart", "fleet-gateway-proxy"):
            write_script(
                host.bin_dir / name,
                (
                    f"#!/bin/sh\nexec /usr/bin/python3 -E -s {runtime_dir / 'gateway_restart.py'} "
                    f'{host.run_dir / "supervisor.sock"} "$@"\n'
                ),
            )


def prepare_host(host: LabHost, runtime_dir: Path) -> None:
    """Create the host's folders and launchers (models are written separately)."""
    for sub in ("models", "srv-fleet", "logs"):
        (host.root / sub).mkdir(parents=True, exist_ok=True)
    if host.spec.gateway:
        for sub in ("etc-litellm", "etc-nginx/fleet", "nginx-temp"):
            (host.root / sub).mkdir(parents=True, exist_ok=True)
    host.run_dir.mkdir(parents=True, exist_ok=True)
    (host.root / "bashrc").write_text(f"# ~/.bashrc of root on the simulated host {host.name}\n")
    write_gpu_state(host)
    write_daemon_bin(host, runtime_dir)
    write_session_bin(host, runtime_dir)


def dockerd_command(host: LabHost) -> list[str]:
    """This host's Docker engine: own data root, socket, bridge and address pool."""
    return [
        "dockerd",
        "--storage-driver=overlay2",
        f"--data-root={host.root / 'docker'}",
        f"--exec-root={host.run_dir / 'exec'}",
        f"--host={host.docker_host}",
        f"--pidfile={host.run_dir / 'docker.pid'}",
        f"--bridge={host.bridge}",
        "--iptables=false",
        "--ip-masq=false",
        "--shutdown-timeout=3",
        f"--default-address-pool={host.slot.address_pool(host.spec.number)}",
        f"--add-runtime=nvidia={host.daemon_bin / 'nvidia-container-runtime'}",
    ]


def dockerd_env(host: LabHost) -> dict[str, str]:
    """dockerd finds the lab's runc wrapper and NVIDIA hook first on its PATH."""
    return {
        "PATH": f"{host.daemon_bin}:{SYSTEM_PATH}",
        "HOME": "/root",
        "LANG": os.environ.get("LANG", "C.UTF-8"),
    }
