"""Two labs on one machine: a second, minimal lab beside the session's gets its own slot
(addresses, bridges, pools, run dirs), both answer, and the second's `down` leaves the
first running and untouched: its daemons, sockets, containers and networks."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from ipaddress import ip_address, ip_network
from pathlib import Path

import pytest

from tests.lab import HostSpec, Lab, claims
from tests.lab.procs import alive, hold_flock, is_ours
from tests.lab.slots import RUN_ROOT
from tests.lab.spec import RTX_3090, make_gpus
from tests.lab.state import LabState

pytestmark = pytest.mark.lab

MACHINE_LOCK = Path("/tmp/fleet-lab-machine.lock")
KEEP = "two-labs-keep"
IMAGE = "vllm/vllm-openai:v0.18.0"


def holds_open(path: Path) -> bool:
    """Is `path` one of this process's open files (as under `flock <path> pytest ...`)?"""
    try:
        wanted = path.stat()
    except FileNotFoundError:
        return False
    for fd in Path("/proc/self/fd").iterdir():
        with contextlib.suppress(OSError):
            found = os.stat(fd)
            if (found.st_dev, found.st_ino) == (wanted.st_dev, wanted.st_ino):
                return True
    return False


@contextlib.contextmanager
def machine_lock(timeout: float = 1800.0) -> Iterator[None]:
    """Two labs at once: hold the machine-wide lab lock for the whole test (already held
    when this session runs under `flock /tmp/fleet-lab-machine.lock`)."""
    if holds_open(MACHINE_LOCK):
        yield
        return
    with MACHINE_LOCK.open("a") as handle:
        hold_flock(handle, timeout, str(MACHINE_LOCK))
        yield


def second_lab(root: Path) -> Lab:
    """One GPU host and no gateway, named and nominally addressed as the first lab's tower."""
    spec = HostSpec(
        "tower",
        "127.0.0.11",
        1,
        make_gpus("tower", RTX_3090, 24576, 1),
        models=("stories42M-embed",),
        image_tags=(IMAGE.split(":")[1],),
    )
    return Lab(root=root, hosts=(spec,))


def links() -> dict[str, list[str]]:
    """Interface name -> IPv4 addresses on this machine."""
    out = subprocess.run(["ip", "-j", "-4", "addr"], capture_output=True, text=True).stdout
    return {
        link["ifname"]: [a["local"] for a in link.get("addr_info", [])] for link in json.loads(out)
    }


def sockets(lab: Lab) -> list[Path]:
    """The unix sockets of a lab's engines (and its gateway's supervisor)."""
    found = [h.run_dir / "docker.sock" for h in lab.hosts.values()]
    if lab.gateway_host is not None:
        found.append(lab.gateway_host.run_dir / "supervisor.sock")
    return found


def start_keeper(lab: Lab, network: str) -> str:
    """A container on its own compose-style network on a lab's tower; its bridge's name."""
    created = lab.docker("tower", "network", "create", network)
    assert created.returncode == 0, created.stderr
    run = lab.docker(
        "tower",
        "run",
        "-d",
        "--name",
        KEEP,
        "--network",
        network,
        "--entrypoint",
        "sleep",
        IMAGE,
        "600",
    )
    assert run.returncode == 0, run.stderr
    return f"br-{created.stdout.strip()[:12]}"


def running(lab: Lab) -> str:
    """`docker inspect` of the keeper on a lab's tower: running flag and pid."""
    return lab.docker("tower", "inspect", "-f", "{{.State.Running}} {{.State.Pid}}", KEEP).stdout


def leftovers(second: Lab, state: LabState, bridge: str) -> list[str]:
    """What of the second lab is still on the machine after its down."""
    host = second.hosts["tower"]
    pool = ip_network(host.pool)
    found = [f"process {r.pid}" for r in state.procs if alive(r.pid)]
    for name, addrs in links().items():
        if name in (host.bridge, bridge) or any(ip_address(a) in pool for a in addrs):
            found.append(f"bridge {name}")
    found += [f"dir {d}" for d in (host.run_dir, RUN_ROOT / str(second.slot.index)) if d.exists()]
    return found


def test_a_second_lab_beside_the_first_leaves_it_intact(lab: Lab, tmp_path: Path) -> None:
    with machine_lock():
        second = second_lab(tmp_path / "second")
        first_state = LabState.load(lab.root / "state.json")
        try:
            first_bridge = start_keeper(lab, "two-labs-first")
            before = running(lab)
            second.up()
            second_bridge = start_keeper(second, "two-labs-second")
            mine, theirs = lab.hosts["tower"], second.hosts["tower"]
            assert second.slot != lab.slot
            assert theirs.address != mine.address and theirs.bridge != mine.bridge
            assert not ip_network(theirs.pool).overlaps(ip_network(mine.pool))
            assert theirs.run_dir != mine.run_dir
            for each in (lab, second):
                where = each.run("tower", "echo $DOCKER_HOST; docker info -f '{{.DockerRootDir}}'")
                assert where.returncode == 0, where.stderr
                assert where.stdout.split() == [
                    each.hosts["tower"].docker_host,
                    str(each.hosts["tower"].root / "docker"),
                ]
            second_state = LabState.load(second.root / "state.json")
            second.down()
            assert leftovers(second, second_state, second_bridge) == []
            for name in lab.hosts:
                assert lab.run(name, "true").returncode == 0, f"{name} of the first lab answers"
            assert running(lab) == before and before.startswith("true ")
            present = links()
            assert first_bridge in present
            assert all(h.bridge in present for h in lab.hosts.values())
            assert all(p.is_socket() for p in sockets(lab))
            assert all(is_ours(r) for r in first_state.procs)
            assert all(all(row.values()) for row in lab.status().values()), lab.status()
            assert claims.owner_of(lab.slot.index) == lab.root, "the first lab keeps its slot"
            shared = ("/models", "/srv/fleet", "/etc/litellm", "/run/sshd")
            assert all(Path(d).is_dir() for d in shared), "the shared mount points stay"
        finally:
            second.down()
            lab.docker("tower", "rm", "-f", KEEP)
            lab.docker("tower", "network", "rm", "two-labs-first")
