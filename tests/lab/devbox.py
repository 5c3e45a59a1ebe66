"""A lab host for the real engines: a Docker host with no GPU, where seats run on the CPU.

Started for the test module that runs the real vLLM CPU build and the real llama-server
in containers (`devbox` in tests/lab/fixtures.py), not by `up`: every other module runs
the stand-ins and has no use for it, and its images take a while to import. Like tower
it is sshd and its own dockerd in a mount namespace of its own (nominal 127.0.0.18,
number 7 of the slot's hosts), but it has no GPU and no nvidia-smi, as a workstation
without a card. Its engine gets the real images through the engines' lab modules
(`tests.lab.real.vllm.import_image`, `tests.lab.real.llamacpp.import_image`) and its
/models the tiny models they write (the random-weight Llama directory, the GGUF file),
copied in. `stop` removes it again: containers, daemons, bridge, its lines in the lab's
SSH files and state.

The vLLM image is 2.4 GB: `docker import` takes ~100 s here. So the engine's data root
is kept between runs in the lab cache, `<cache>/devbox-engine-<key>` (the key names the
images' rootfs tars; a new key replaces the old directory; the install fills it,
`python -m tests.lab prepare engines`), held with an flock while the
devbox runs; a second lab on the machine that finds it held imports into its own data
root instead. Whatever a crashed run left there (containers, networks) is removed before
the devbox is used.
"""

from __future__ import annotations

import fcntl
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

from . import procs, sshcfg, teardown
from .bringup import create_bridge, port_open, procs_path, record_host, start_daemon, wait_for
from .hosts import LabHost, dockerd_command, dockerd_env, prepare_host
from .nspawn import write_client_files
from .spec import SSH_PORT, HostSpec

if TYPE_CHECKING:
    from .lab import Lab

SPEC = HostSpec("devbox", "127.0.0.18", 8, image_tags=())
ROLES = ("sshd", "dockerd")  # stopped in this order
ENGINE_CACHE = "devbox-engine-"


@dataclass
class Devbox:
    """The running devbox: the lab host, and the names its models have under /models."""

    host: LabHost
    models: dict[str, str]  # what -> its path on the host (/models/...)
    cache_lock: IO[str] | None = None  # held while the engine uses the cached data root

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


def cached_engine(cache: Path, key: str) -> tuple[Path, IO[str]] | None:
    """The cached data root for `key`, locked for this process (older keys' removed);
    None while another lab holds it."""
    cache.mkdir(parents=True, exist_ok=True)
    handle = (cache / f"{ENGINE_CACHE}lock").open("w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    for old in cache.glob(f"{ENGINE_CACHE}*"):
        if old.is_dir() and old.name != f"{ENGINE_CACHE}{key}":
            shutil.rmtree(old, ignore_errors=True)
    return cache / f"{ENGINE_CACHE}{key}", handle


def engine_command(host: LabHost, data_root: Path | None) -> list[str]:
    """The host's dockerd, on the cached data root if it has one."""
    command = dockerd_command(host)
    if data_root is None:
        return command
    return [f"--data-root={data_root}" if a.startswith("--data-root=") else a for a in command]


def start(
    lab: Lab,
    images: tuple[Callable[[str], None], ...],
    models: dict[str, Path],
    cache: tuple[Path, str] | None = None,
) -> Devbox:
    """Bring the devbox up in `lab`: its daemons, then each of `images` (an
    `import_image(docker_host)`) into its engine and `models` into its /models; `cache`
    (the lab cache, a key) keeps the engine's images for the next run."""
    held = cached_engine(*cache) if cache else None
    host = LabHost(SPEC, lab.root / "hosts" / SPEC.name, lab.slot)
    lab.hosts[host.name] = host
    record_host(lab, host)
    prepare_host(host, lab.root / "runtime")
    sshcfg.keygen(host.root / "ssh_host_ed25519_key", f"root@{host.name}")
    write_client_files(lab)
    create_bridge(host)
    engine = engine_command(host, held[0] if held else None)
    start_daemon(lab, host, "dockerd", engine, dockerd_env(host))
    sshd_conf = host.root / "sshd_config"
    sshd_conf.write_text(sshcfg.sshd_config(host, lab.ssh_dir / "authorized_keys"))
    sshd = ["/usr/sbin/sshd", "-D", "-e", "-f", str(sshd_conf)]
    start_daemon(lab, host, "sshd", sshd, {"PATH": procs_path(), "LANG": "C.UTF-8"})
    sock = host.run_dir / "docker.sock"
    wait_for(f"dockerd of devbox (see {host.root}/logs/dockerd.log)", sock.exists, 60)
    teardown.clear_engine(host.docker_host)  # what a crashed run left in the cached root
    placed = {what: copy_model(path, host.models_dir) for what, path in models.items()}
    for import_image in images:
        import_image(host.docker_host)
    wait_for("sshd of devbox", lambda: port_open(host.address, SSH_PORT), 30)
    return Devbox(host=host, models=placed, cache_lock=held[1] if held else None)


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
    shutil.rmtree(host.root / "docker", ignore_errors=True)  # the cached root stays
    shutil.rmtree(host.run_dir, ignore_errors=True)
    if devbox.cache_lock is not None:
        devbox.cache_lock.close()
