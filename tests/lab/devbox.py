"""A lab host for the real engines: a Docker host with no GPU, where seats run on the CPU.

Started for the test module that runs the real vLLM CPU build and the real llama-server
in containers (`devbox` in tests/lab/fixtures.py), not by `up`: every other module runs
the stand-ins and has no use for it, and its images take a while to import. Like tower
it is sshd and its own dockerd in a mount namespace of its own (nominal 127.0.0.17,
number 7 of the slot's hosts), but it has no GPU and no nvidia-smi, as a workstation
without a card. Its engine gets the real images through the engines' lab modules
(`tests.lab.real.vllm.import_image`, `tests.lab.real.llamacpp.import_image`) and its
/models the tiny models they write (`MODELS`: the random-weight Llama directory and the
GGUF files), copied in. `stop` removes it again: containers, daemons, bridge, engine
data, its lines in the lab's SSH files and state.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from . import procs, sshcfg, teardown
from .bringup import create_bridge, port_open, procs_path, record_host, start_daemon, wait_for
from .hosts import LabHost, dockerd_command, dockerd_env, prepare_host
from .nspawn import write_client_files
from .spec import SSH_PORT, HostSpec

if TYPE_CHECKING:
    from .lab import Lab

SPEC = HostSpec("devbox", "127.0.0.17", 7, image_tags=())
ROLES = ("sshd", "dockerd")  # stopped in this order


@dataclass
class Devbox:
    """The running devbox: the lab host, and the names its models have under /models."""

    host: LabHost
    models: dict[str, str]  # what -> its path on the host (/models/...)

    @property
    def address(self) -> str:
        """Its address in this lab (sshd, published seat ports)."""
        return self.host.address


def copy_model(source: Path, models_dir: Path) -> str:
    """Copy one model (a directory or a file) into the host's /models; its path there."""
    target = models_dir / source.name
    if source.is_dir():
        shutil.copytree(source, target, dirs_exist_ok=True)
    else:
        shutil.copyfile(source, target)
    return f"/models/{source.name}"


def start(
    lab: Lab,
    images: tuple[Callable[[str], None], ...],
    models: dict[str, Path],
) -> Devbox:
    """Bring the devbox up in `lab`: its daemons, then each of `images` (an
    `import_image(docker_host)`) into its engine and `models` into its /models."""
    host = LabHost(SPEC, lab.root / "hosts" / SPEC.name, lab.slot)
    lab.hosts[host.name] = host
    record_host(lab, host)
    prepare_host(host, lab.root / "runtime")
    sshcfg.keygen(host.root / "ssh_host_ed25519_key", f"root@{host.name}")
    write_client_files(lab)
    create_bridge(host)
    start_daemon(lab, host, "dockerd", dockerd_command(host), dockerd_env(host))
    sshd_conf = host.root / "sshd_config"
    sshd_conf.write_text(sshcfg.sshd_config(host, lab.ssh_dir / "authorized_keys"))
    sshd = ["/usr/sbin/sshd", "-D", "-e", "-f", str(sshd_conf)]
    start_daemon(lab, host, "sshd", sshd, {"PATH": procs_path(), "LANG": "C.UTF-8"})
    sock = host.run_dir / "docker.sock"
    wait_for(f"dockerd of devbox (see {host.root}/logs/dockerd.log)", sock.exists, 60)
    placed = {what: copy_model(path, host.models_dir) for what, path in models.items()}
    for import_image in images:
        import_image(host.docker_host)
    wait_for("sshd of devbox", lambda: port_open(host.address, SSH_PORT), 30)
    return Devbox(host=host, models=placed)


def stop(lab: Lab, devbox: Devbox) -> None:
    """Remove the devbox: its containers and networks, its daemons (the processes
    `start` recorded), bridge, engine data and run dir, and its place in the lab's
    SSH files and state (which list only what still runs)."""
    host = devbox.host
    teardown.clear_engine(host.docker_host)
    mine = [r for r in lab.state.procs if r.host == host.name]
    for role in ROLES:
        procs.stop([r.pid for r in mine if r.role == role and procs.is_ours(r)], timeout=10.0)
    with lab.state.lock:
        lab.state.procs = [r for r in lab.state.procs if r not in mine]
        lab.state.hosts.pop(host.name, None)
        lab.state.save()
    lab.hosts.pop(host.name, None)
    write_client_files(lab)
    procs.run(["ip", "link", "delete", host.bridge])
    shutil.rmtree(host.root / "docker", ignore_errors=True)
    shutil.rmtree(host.run_dir, ignore_errors=True)
