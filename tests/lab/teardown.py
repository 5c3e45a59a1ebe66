"""`down`: remove everything a lab (running or crashed) left on this machine.

Only what the state file recorded is touched: processes by pid + start time, anything
still inside the hosts' mount namespaces, container processes of the hosts' engines,
the systemd hosts' containers (nspawn, then what is left in their mount namespaces)
and overlays, the lab's bridges and veths (and compose `br-*` bridges inside the lab's
own recorded address pools), its run dirs, the hosts' engine data, and its slot's
claim; the shared mount points only when it is the last lab (claims.py). `footprint`
decides what to remove and leaves out whatever another live lab recorded, so a down
never reaches into another lab, even for a stale state whose slot has been taken over
since.
"""

from __future__ import annotations

import gc
import ipaddress
import json
import re
import shutil
import socket
import subprocess
import warnings
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors
import requests

from tests.waiting import poll

from . import claims, nspawn_cgroup, procs
from .state import LabState

# nspawn: systemd hosts (nspawn.py); nspawn-init: a host's pid 1 still there after its
# nspawn, stuck in its shutdown: killed at once (its whole pid namespace goes with it)
ROLE_ORDER = ("front", "gateway", "nspawn", "nspawn-init", "sshd", "dockerd")
AT_ONCE = ("nspawn-init",)


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def inside(addrs: list[str], nets: list[Network]) -> bool:
    """Does any of the addresses lie in any of the networks?"""
    return any(ipaddress.ip_address(a) in net for a in addrs for net in nets)


@dataclass(frozen=True)
class Footprint:
    """What a down removes on the machine besides its recorded processes."""

    namespaces: frozenset[str]
    bridges: tuple[str, ...]
    run_dirs: tuple[str, ...]


def footprint(state: LabState, others: list[LabState], links: dict[str, list[str]]) -> Footprint:
    """The state's namespaces, bridges and run dirs, minus anything another live lab
    recorded. `links`: interface name -> its IPv4 addresses (as `ip -j addr` lists them)."""
    slot_taken = state.slot is not None and any(o.slot == state.slot for o in others)
    foreign_ns = {n for o in others for n in o.namespaces}
    foreign_bridges = {b for o in others for b in o.bridges}
    foreign_pools = [ipaddress.ip_network(p) for o in others for p in o.pools]
    foreign_runs = {h["run_dir"] for o in others for h in o.hosts.values()}
    pools = [ipaddress.ip_network(p) for p in state.pools]
    bridges: set[str] = set()
    if not slot_taken:
        composed = {n for n, a in links.items() if n.startswith("br-") and inside(a, pools)}
        bridges = (set(state.bridges) | composed) - foreign_bridges
        bridges = {b for b in bridges if not inside(links.get(b, []), foreign_pools)}
    runs = [] if slot_taken else [h["run_dir"] for h in state.hosts.values()]
    return Footprint(
        frozenset(set(state.namespaces) - foreign_ns),
        tuple(sorted(bridges)),
        tuple(r for r in runs if r not in foreign_runs),
    )


def ipv4_links() -> dict[str, list[str]]:
    """Interface name -> IPv4 addresses, on this machine."""
    out = subprocess.run(["ip", "-j", "-4", "addr", "show"], capture_output=True, text=True).stdout
    return {
        link["ifname"]: [a["local"] for a in link.get("addr_info", [])]
        for link in json.loads(out or "[]")
    }


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
        _collect_leaked_sockets()  # an engine that went away mid-way leaves docker-py's socket


def _collect_leaked_sockets() -> None:
    """Finalise docker-py's leaked socket now, quietly, rather than in a later test."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


def stop_recorded(state: LabState) -> None:
    """Stop the recorded daemons, the gateway's front and proxies first, engines last."""
    for role in ROLE_ORDER:
        mine = [r.pid for r in state.procs if r.role == role and procs.is_ours(r)]
        procs.stop(mine, timeout=0.0 if role in AT_ONCE else 10.0)


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


def lab_leftovers(state: LabState, plan: Footprint) -> list[int]:
    """Live processes in the hosts' namespaces or the hosts' containers."""
    roots = {Path(host["root"]) for host in state.hosts.values()}
    found = procs.pids_in_namespaces(set(plan.namespaces), roots)
    return sorted(set(found + container_pids(container_ids(state))))


def kill_leftovers(state: LabState, plan: Footprint, timeout: float = 60.0) -> list[int]:
    """Anything still in the hosts' namespaces or containers is the lab's: SIGKILL it, and
    look again until two scans in a row find nothing.

    SIGKILL, not SIGTERM: a container's shim that is asked to stop (or sees its container
    die) starts `runc` to clean up, a new process in the namespace after the scan that
    found the shim; a killed shim starts nothing. The second scan catches a process that
    was being forked during the first. Returns what is still left after `timeout` s.
    """
    clean = 0

    def settled() -> bool:
        nonlocal clean
        left = lab_leftovers(state, plan)
        procs.kill(left)
        clean = 0 if left else clean + 1
        return clean >= 2

    return [] if poll(settled, timeout, interval=0.1) else lab_leftovers(state, plan)


def delete_bridges(plan: Footprint) -> None:
    """Remove the lab's kernel bridges."""
    for name in plan.bridges:
        subprocess.run(["ip", "link", "delete", name], capture_output=True)


def remove_files(state: LabState, plan: Footprint) -> None:
    """Engine data, GPU usage records and run dirs of the lab's hosts."""
    for host in state.hosts.values():
        shutil.rmtree(Path(host["root"]) / "docker", ignore_errors=True)
        shutil.rmtree(Path(host["root"]) / "overlay", ignore_errors=True)  # a systemd host's
        if host.get("cgroup"):
            nspawn_cgroup.remove(host["cgroup"])
        usage = Path(host["root"]) / "gpu" / "usage"
        for path in usage.glob("*.json") if usage.is_dir() else []:
            path.unlink(missing_ok=True)
    for run_dir in plan.run_dirs:
        shutil.rmtree(run_dir, ignore_errors=True)


def teardown(state: LabState) -> None:
    """Bring the recorded lab down completely, and nothing of any other lab."""
    for record in state.procs:
        if record.role == "dockerd" and procs.is_ours(record):
            clear_engine(state.hosts[record.host]["docker_host"])
    stop_recorded(state)
    plan = footprint(state, claims.others(state.root), ipv4_links())
    left = kill_leftovers(state, plan)
    delete_bridges(plan)
    remove_files(state, plan)
    if left:  # the state stays, so that another down can try again
        raise procs.LabError(f"down could not end {', '.join(map(procs.describe, left))}")
    claims.release(state)
    state.path.unlink(missing_ok=True)
