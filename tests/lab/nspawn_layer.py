"""The systemd hosts' root file system and each host's own layer over it (before it boots).

`tests.lab.nspawn` boots the hosts: `ensure_rootfs()` gives the shared minbase Debian
tree (built once with mmdebstrap, cached in ROOTFS), `write_layer(lab, host)` the files a
host differs in (hostname, /etc/hosts, 10-host0.network, sshd's drop-in with the host
key, llama-server and vllm, on a GPU host nvidia-smi), written under its overlay's upper
directory.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from . import procs
from .cache import cached
from .image import LLAMA_SERVER_SCRIPT, VLLM_SCRIPT
from .spec import SSH_PORT

if TYPE_CHECKING:
    from .lab import Lab
    from .nspawn import SystemdHost

ROOTFS = cached("systemd-rootfs", "FLEET_LAB_SYSTEMD_ROOTFS")
MIRROR = os.environ.get("FLEET_LAB_DEBIAN_MIRROR", "http://deb.debian.org/debian")
PACKAGES = "systemd,systemd-sysv,dbus,openssh-server,python3,iproute2,procps,ca-certificates"
PRIVATE_MOUNTS = ("unshare", "--mount", "--propagation", "private")
MASKED = ("systemd-tmpfiles-setup-dev.service", "systemd-update-utmp-runlevel.service")


# -- the rootfs --------------------------------------------------------------------------
def ensure_rootfs() -> Path:
    """The cached rootfs, built first if missing (one builder at a time on the machine)."""
    if (ROOTFS / "usr/lib/systemd/systemd").exists():
        return ROOTFS
    ROOTFS.parent.mkdir(parents=True, exist_ok=True)
    with (ROOTFS.parent / f".{ROOTFS.name}.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        if (ROOTFS / "usr/lib/systemd/systemd").exists():
            return ROOTFS
        building = ROOTFS.with_name(ROOTFS.name + ".building")
        shutil.rmtree(building, ignore_errors=True)
        # mmdebstrap mounts /proc, /sys and /dev inside the tree while it builds: in a
        # mount namespace of its own, a build that is killed half-way leaves no mount
        command = [*PRIVATE_MOUNTS, "mmdebstrap", "--variant=minbase", f"--include={PACKAGES}"]
        procs.run([*command, "bookworm", str(building), MIRROR], timeout=900)
        building.rename(ROOTFS)
    return ROOTFS


# -- one host's layer ------------------------------------------------------------------
def write(path: Path, text: str, mode: int = 0o644) -> None:
    """A file in a host's layer (parents created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)


def sshd_dropin() -> str:
    """sshd_config.d drop-in: the lab's port, host key and client key, nothing else.

    sshd listens on every address of the host's own network namespace (host0 and lo),
    not on host0's address alone: networkd gives host0 its address only once host0 has
    a carrier, i.e. once this machine's end of the veth is up (nspawn.start), which on a
    busy machine comes after the boot has reached ssh.service. A bind to the address then
    failed (`Bind to port 2222 on <address> failed: Cannot assign requested address`,
    `fatal: Cannot bind any address`, exit 255, which Debian's ssh.service does not
    restart), and the host never answered. Recorded in tests/corpus/systemd/boot-*.
    """
    return (
        f"ListenAddress 0.0.0.0:{SSH_PORT}\n"
        "HostKey /etc/ssh/fleet-lab/ssh_host_ed25519_key\n"
        "AuthorizedKeysFile /etc/ssh/fleet-lab/authorized_keys\n"
        "PermitRootLogin prohibit-password\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nUsePAM no\nUseDNS no\nPrintMotd no\n"
        "MaxStartups 200:30:400\nMaxSessions 100\n"
    )


def write_layer(lab: Lab, host: SystemdHost) -> None:
    """Everything the host differs in from the shared rootfs, before it boots."""
    shutil.rmtree(host.root / "overlay", ignore_errors=True)
    etc = host.upper / "etc"
    write(etc / "hostname", f"{host.name}\n")
    write(etc / "hosts", f"127.0.0.1 localhost\n{host.address} {host.name}\n")
    write(
        etc / "systemd/network/10-host0.network",
        f"[Match]\nName=host0\n\n[Network]\nAddress={host.address}/25\nLinkLocalAddressing=no\n",
    )
    wants = etc / "systemd/system/multi-user.target.wants"
    wants.mkdir(parents=True, exist_ok=True)
    (wants / "systemd-networkd.service").symlink_to("/lib/systemd/system/systemd-networkd.service")
    # Units that failed now and then at boot (the host then `degraded`) and that a lab host
    # does not need: nspawn populates the container's /dev itself, and nothing reads utmp.
    for unit in MASKED:
        (etc / "systemd/system" / unit).symlink_to("/dev/null")
    write(etc / "ssh/sshd_config.d/10-fleet-lab.conf", sshd_dropin())
    keys = etc / "ssh/fleet-lab"
    keys.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(host.root / "ssh_host_ed25519_key", keys / "ssh_host_ed25519_key")
    (keys / "ssh_host_ed25519_key").chmod(0o600)
    shutil.copyfile(lab.ssh_dir / "authorized_keys", keys / "authorized_keys")
    backend = "cuda" if host.spec.gpus else "cpu"
    program = "/usr/local/bin/llama-server"
    server = LLAMA_SERVER_SCRIPT.replace(
        "import sys\n",
        "import os, sys\n"
        f"os.environ.setdefault('FLEET_LAB_LLAMACPP_BACKEND', '{backend}')\n"
        f"os.environ.setdefault('FLEET_LAB_LLAMACPP_PROGRAM', '{program}')\n",
    )
    write(host.upper / program.lstrip("/"), server, 0o755)
    write(host.upper / "usr/local/bin/vllm", VLLM_SCRIPT, 0o755)
    if host.spec.gpus:
        write(
            host.upper / "usr/local/bin/nvidia-smi",
            "#!/bin/sh\nFLEET_LAB_GPU_DIR=/run/fleet-lab-gpu exec /usr/bin/python3 -E -s "
            '/opt/fleet-lab/runtime/nvidia_smi.py "$@"\n',
            0o755,
        )
