"""`up`: the steps that bring the lab's hosts, engines, sshds and gateway up.

Called by Lab.up() once the lab holds its slot (claims.py); every process and
machine-level change is recorded in the state file as soon as it exists, so `down` can
undo a half-finished `up`.
"""

from __future__ import annotations

import secrets
import shutil
import socket
import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from tests.waiting import poll, wait_until

from . import claims, gateway, image, models, procs, sshcfg
from .hosts import LabHost, dockerd_command, dockerd_env, prepare_host
from .procs import LabError
from .spec import GATEWAY_PORT, PROXY_PORTS, SSH_PORT

if TYPE_CHECKING:
    from .lab import Lab

RUNTIME_SRC = Path(__file__).resolve().parent / "runtime"
COMPOSE_PLUGIN = Path("/usr/local/lib/docker/cli-plugins/docker-compose")
NEEDED = ("dockerd", "containerd", "runc", "unshare", "ssh", "ssh-keygen", "ip")


def preflight(lab: Lab) -> None:
    """Everything `up` needs is installed (tests/lab/install.sh puts it there)."""
    missing = [tool for tool in NEEDED if not shutil.which(tool, path=procs_path())]
    for path in (
        Path("/usr/sbin/sshd"),
        image.PYTHON,
        Path("/bin/busybox"),
        COMPOSE_PLUGIN,
        Path("/usr/bin/docker"),
        gateway.LITELLM_VENV / "bin" / "litellm",
    ):
        if not path.exists():
            missing.append(str(path))
    if not (lab.corpus / "model-configs").is_dir():
        missing.append(f"{lab.corpus} (tests/corpus)")
    if missing:
        raise LabError(f"missing: {', '.join(missing)}; run tests/lab/install.sh")


def procs_path() -> str:
    """The system PATH (the lab does not rely on the caller's)."""
    return "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def make_dirs(lab: Lab) -> None:
    """The lab's folder, then mount points on the machine, each recorded before it is made
    (so that `down` removes it even when the lab dies right after; they are shared with
    other labs, so the last lab down removes them)."""
    lab.root.mkdir(parents=True, exist_ok=True)
    for path in (*procs.MOUNT_POINTS, Path("/run/sshd")):
        claims.make_machine_dir(lab.state, path)
    runtime = lab.root / "runtime"
    shutil.rmtree(runtime, ignore_errors=True)
    shutil.copytree(RUNTIME_SRC, runtime, ignore=shutil.ignore_patterns("__pycache__"))


def write_ssh(lab: Lab) -> None:
    """Client key, host keys, ssh_config, known_hosts, ~/.ssh for the docker SDK, env file."""
    lab.ssh_dir.mkdir(parents=True, exist_ok=True)
    client_pub = sshcfg.keygen(lab.client_key, "fleet-lab-client")
    (lab.ssh_dir / "authorized_keys").write_text(client_pub + "\n")
    lines = []
    for host in lab.hosts.values():
        host.root.mkdir(parents=True, exist_ok=True)
        pub = sshcfg.keygen(host.root / "ssh_host_ed25519_key", f"root@{host.name}")
        lines.append(sshcfg.known_hosts_line(host, pub))
    lab.known_hosts.write_text("\n".join(lines) + "\n")
    hosts = tuple(lab.hosts.values())
    lab.ssh_config.write_text(sshcfg.client_config(hosts, lab.client_key, lab.known_hosts))
    home_ssh = lab.home / ".ssh"
    home_ssh.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(lab.ssh_config, home_ssh / "config")
    shutil.copyfile(lab.known_hosts, home_ssh / "known_hosts")
    for name in ("id_ed25519", "id_ed25519.pub"):  # paramiko's default key discovery
        shutil.copyfile(lab.ssh_dir / name, home_ssh / name)
    (home_ssh / "id_ed25519").chmod(0o600)
    key = "sk-lab-" + secrets.token_hex(16)
    where = " ".join(f"{h.name}={h.address}" for h in hosts)
    lab.env_file.write_text(
        f"# lab slot {lab.slot.index}: {where}\n"
        f"export FLEET_SSH_CONFIG={lab.ssh_config}\nexport LITELLM_MASTER_KEY={key}\n"
    )


def record_host(lab: Lab, host: LabHost) -> None:
    """Note the host's folders in the state before anything runs there."""
    with lab.state.lock:
        lab.state.hosts[host.name] = {
            "root": str(host.root),
            "run_dir": str(host.run_dir),
            "docker_host": host.docker_host,
        }
    lab.state.add("bridge", host.bridge)
    lab.state.add("pool", host.pool)


def create_bridge(host: LabHost) -> None:
    """The host's own bridge for its engine's default network (a bridge of that name is
    a leftover of this slot: the lab holds the slot, see claims.py)."""
    bridge = host.bridge
    subprocess.run(["ip", "link", "delete", bridge], capture_output=True)
    procs.run(["ip", "link", "add", bridge, "type", "bridge"])
    procs.run(["ip", "addr", "add", host.bridge_cidr, "dev", bridge])
    procs.run(["ip", "link", "set", bridge, "up"])


def start_daemon(
    lab: Lab, host: LabHost, role: str, command: list[str], env: dict[str, str]
) -> None:
    """Start one of the host's daemons in its own mount namespace and record it."""
    log = host.root / "logs" / f"{role}.log"
    record, proc = procs.spawn(
        role, host.name, procs.in_host_namespace(host.root, command), log, env
    )
    lab.children.append(proc)
    lab.state.add_proc(record)
    own = procs.foreign_namespaces()
    # until unshare has switched namespaces
    namespace = poll(
        lambda: (ns := procs.mount_namespace(record.pid)) not in own and ns, 5, interval=0.02
    )
    if namespace is None or namespace in own:
        raise LabError(f"{role} of {host.name} did not enter its own mount namespace; see {log}")
    lab.state.add_proc(record, namespace)


def start_host(lab: Lab, host: LabHost) -> None:
    """Folders, models, bridge, dockerd and sshd of one host."""
    record_host(lab, host)
    prepare_host(host, lab.root / "runtime")
    models.populate(host.models_dir, host.spec.models, lab.corpus)
    create_bridge(host)
    start_daemon(lab, host, "dockerd", dockerd_command(host), dockerd_env(host))
    sshd_conf = host.root / "sshd_config"
    sshd_conf.write_text(sshcfg.sshd_config(host, lab.ssh_dir / "authorized_keys"))
    start_daemon(
        lab,
        host,
        "sshd",
        ["/usr/sbin/sshd", "-D", "-e", "-f", str(sshd_conf)],
        {"PATH": procs_path(), "LANG": "C.UTF-8"},
    )
    if host.spec.gateway:
        start_gateway(lab, host)


def start_gateway(lab: Lab, host: LabHost) -> None:
    """The LiteLLM proxy on the first proxy port under its supervisor, reading the host's
    /etc/litellm, and the nginx front routing to it."""
    (host.root / "etc-litellm" / "config.yaml").write_text(lab.initial_gateway_config)
    nginx_dir = host.root / "etc-nginx"
    (nginx_dir / "nginx.conf").write_text(
        gateway.nginx_conf(host.address, GATEWAY_PORT, host.root, host.run_dir)
    )
    (nginx_dir / "fleet" / "litellm-upstream.conf").write_text(
        gateway.upstream_text(host.address, PROXY_PORTS[0])
    )
    supervisor = [
        "/usr/bin/python3",
        "-E",
        "-s",
        str(lab.root / "runtime" / "gateway_supervisor.py"),
        "--socket",
        str(host.run_dir / "supervisor.sock"),
        "--logs",
        str(host.root / "logs"),
        "--run",
        str(host.run_dir),
        "--ports",
        ",".join(str(p) for p in PROXY_PORTS),
        "--",
        *gateway.litellm_command(host.address, PROXY_PORTS[0]),
    ]
    start_daemon(lab, host, "gateway", supervisor, gateway.proxy_env(lab.master_key))
    start_daemon(lab, host, "front", ["/usr/sbin/nginx"], {"PATH": procs_path()})


def wait_for(what: str, check: Callable[[], object], timeout: float) -> None:
    """Poll `check()` until true or raise LabError naming `what` (tests/waiting.py)."""
    wait_until(check, timeout, what, error=LabError)


def port_open(address: str, port: int) -> bool:
    """Does something accept TCP connections there?"""
    try:
        with socket.create_connection((address, port), timeout=0.5):
            return True
    except OSError:
        return False


def finish_host(lab: Lab, host: LabHost, tar: Path) -> None:
    """Wait for the host's engine and sshd; give GPU hosts their engine images."""
    sock = host.run_dir / "docker.sock"
    wait_for(f"dockerd of {host.name} (see {host.root}/logs/dockerd.log)", sock.exists, 60)
    if host.spec.image_tags:
        image.install_images(host.docker_host, tar, host.spec.image_tags)
    wait_for(f"sshd of {host.name}", lambda: port_open(host.address, SSH_PORT), 30)


def bring_up(lab: Lab) -> None:
    """All hosts in parallel, then the gateway's readiness."""
    preflight(lab)
    make_dirs(lab)
    write_ssh(lab)
    tar = image.rootfs_tar(lab.root / "cache")
    hosts = list(lab.hosts.values())
    with ThreadPoolExecutor(max_workers=len(hosts)) as pool:
        list(pool.map(lambda h: start_host(lab, h), hosts))
        list(pool.map(lambda h: finish_host(lab, h, tar), hosts))
    if lab.gateway_host is not None and not gateway.wait_ready(lab.gateway_url):
        log = lab.gateway_host.root / "logs" / f"litellm-{PROXY_PORTS[0]}.log"
        raise LabError(f"LiteLLM proxy did not become ready; see {log}")
