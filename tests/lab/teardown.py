"""`down`: remove everything a lab (running or crashed) left on this machine.

Only what the state file recorded is touched: processes by pid + start time, anything
still inside the hosts' mount namespaces, container processes of the hosts' engines,
the lab's bridges (and compose `br-*` bridges inside the lab's address pools), the
mount-point directories the lab created, and the hosts' engine data.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import re
import shutil
import socket
import subprocess
from pathlib import Path

import docker
import docker.errors
import requests

from . import procs
from .state import LabState

LAB_NETS = (ipaddress.ip_network("172.30.0.0/16"), ipaddress.ip_network("172.31.0.0/16"))
ROLE_ORDER = ("gateway", "sshd", "dockerd")


def engine_answers(docker_host: str) -> bool:
    """True if the engine's unix socket accepts a connection.

    Asked first because docker-py leaks the socket of a failed connect (a ResourceWarning
    at some later garbage collection, which the test suite treats as an error).
    """
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(2)
        try:
            probe.connect(docker_host.removeprefix("unix://"))
        except OSError:
            return False
    return True


def clear_engine(docker_host: str) -> None:
    """Remove the engine's containers and networks while it still runs (fast down)."""
    if not engine_answers(docker_host):
        return
    client = docker.DockerClient(base_url=docker_host, version="1.41", timeout=15)
    try:
        for container in client.containers.list(all=True):
            container.remove(force=True)
        client.networks.prune()
    except (docker.errors.DockerException, requests.RequestException):
        pass
    finally:
        client.close()


def stop_recorded(state: LabState) -> None:
    """Stop the recorded daemons, gateway first, engines last."""
    for role in ROLE_ORDER:
        mine = [r.pid for r in state.procs if r.role == role and procs.is_ours(r)]
        procs.stop(mine, timeout=10.0)


def container_ids(state: LabState) -> set[str]:
    """Ids of every container the hosts' engines ever created."""
    ids: set[str] = set()
    for host in state.hosts.values():
        containers = Path(host["root"]) / "docker" / "containers"
        if containers.is_dir():
            ids.update(p.name for p in containers.iterdir())
    return ids


def container_pids(ids: set[str]) -> list[int]:
    """Live processes whose cgroup names one of the lab's containers."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        match = re.search(r"[0-9a-f]{64}", procs_read(entry / "cgroup"))
        if match and match.group(0) in ids and procs.alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def procs_read(path: Path) -> str:
    """A /proc file, '' when the process is gone."""
    try:
        return path.read_text()
    except OSError:
        return ""


def kill_leftovers(state: LabState) -> None:
    """Anything still in the hosts' namespaces or containers is the lab's: kill it."""
    leftovers = procs.pids_in_namespaces(set(state.namespaces))
    leftovers += container_pids(container_ids(state))
    procs.stop(sorted(set(leftovers)), timeout=3.0)


def lab_bridges(state: LabState) -> list[str]:
    """Recorded bridges plus `br-*` bridges whose address lies in the lab's pools."""
    out = subprocess.run(["ip", "-j", "-4", "addr", "show"], capture_output=True, text=True).stdout
    names = set()
    for link in json.loads(out or "[]"):
        for addr in link.get("addr_info", []):
            ip = ipaddress.ip_address(addr["local"])
            if link["ifname"].startswith("br-") and any(ip in net for net in LAB_NETS):
                names.add(link["ifname"])
    return sorted(names | set(state.bridges))


def delete_bridges(state: LabState) -> None:
    """Remove the lab's kernel bridges."""
    for name in lab_bridges(state):
        subprocess.run(["ip", "link", "delete", name], capture_output=True)


def remove_files(state: LabState) -> None:
    """Engine data, run dirs and the mount points the lab created (if empty)."""
    for host in state.hosts.values():
        shutil.rmtree(Path(host["root"]) / "docker", ignore_errors=True)
        shutil.rmtree(host["run_dir"], ignore_errors=True)
        usage = Path(host["root"]) / "gpu" / "usage"
        for path in usage.glob("*.json") if usage.is_dir() else []:
            path.unlink(missing_ok=True)
    for path in map(Path, reversed(state.created_dirs)):
        with contextlib.suppress(OSError):
            path.rmdir()


def teardown(state: LabState) -> None:
    """Bring the recorded lab down completely."""
    for record in state.procs:
        if record.role == "dockerd" and procs.is_ours(record):
            clear_engine(state.hosts[record.host]["docker_host"])
    stop_recorded(state)
    kill_leftovers(state)
    delete_bridges(state)
    remove_files(state)
    state.path.unlink(missing_ok=True)
