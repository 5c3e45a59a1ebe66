"""The lab's Python API: simulated GPU hosts on loopback for the integration tests.

    lab = Lab()                  # tower, rig, gateway (Lab(gpu_hosts=8): bench-1..8 + gateway)
    lab.up()                     # cleans leftovers first, takes a free slot; under a minute
    lab.address_of("tower")      # e.g. 127.6.0.11: addresses, bridges, pools follow the slot
    lab.run("tower", "nvidia-smi -L")          # through real ssh -F <lab.ssh_config>
    lab.compose_up("tower", "demo", compose_text)
    lab.set_gateway_config(text); lab.restart_gateway()
    lab.down()                   # no process, bridge, mount or network left (of this lab)

Other labs on the machine (other lab directories) are never touched. See
tests/lab/README.md for the whole surface.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from . import claims, gateway, slots, teardown
from .bringup import bring_up, port_open
from .layout import LabLayout
from .procs import LabError, hold_flock, is_ours
from .spec import PROXY_PORTS, SSH_PORT, HostSpec, bench_hosts, default_hosts
from .state import LabState

REPO = Path(__file__).resolve().parents[2]


class Lab(LabLayout):
    """A set of simulated hosts with real sshd, Docker engines and a LiteLLM proxy.

    `slot` (else FLEET_LAB_SLOT) is the slot `up` must take; without one, `up` takes the
    slot hashed from the lab directory, or the next free one. Until then (and for a
    lab that is up) the lab is where its state records it.
    """

    def __init__(
        self,
        root: Path | None = None,
        hosts: tuple[HostSpec, ...] | None = None,
        gpu_hosts: int | None = None,
        slot: int | None = None,
    ) -> None:
        lab_dir = Path(root or os.environ.get("FLEET_LAB_DIR") or REPO / ".lab").resolve()
        specs = hosts or (bench_hosts(gpu_hosts) if gpu_hosts else default_hosts())
        self.requested_slot = slots.check_slot(slot) if slot is not None else slots.slot_from_env()
        self.corpus = Path(os.environ.get("FLEET_LAB_CORPUS") or REPO / "tests" / "corpus")
        self.children: list[subprocess.Popen[bytes]] = []
        self.state = LabState(lab_dir / "state.json")
        recorded = LabState.load(self.state.path).slot
        if recorded is None:
            recorded = self.requested_slot
        super().__init__(
            lab_dir, specs, slots.hashed_slot(lab_dir) if recorded is None else recorded
        )

    # -- life cycle -------------------------------------------------------------------
    @contextmanager
    def locked(self, timeout: float = 1800.0) -> Iterator[None]:
        """Hold the lab for this process (other test sessions wait for their turn)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with (self.root / "lock").open("w") as handle:
            hold_flock(handle, timeout, f"lab {self.root}")
            yield

    def up(self) -> None:
        """Bring the lab up from whatever state the machine is in (under `locked()` or not)."""
        self.root.mkdir(parents=True, exist_ok=True)
        self.down()
        self.state = LabState(self.root / "state.json")
        wanted = self.requested_slot
        try:
            first = slots.hashed_slot(self.root) if wanted is None else wanted
            self.place(claims.claim(self.state, first, explicit=wanted is not None))
            bring_up(self)
        except BaseException:
            self.down()
            raise

    def down(self) -> None:
        """Remove every process, bridge, mount and network of this (or a crashed) lab."""
        teardown.teardown(LabState.load(self.root / "state.json"))
        for child in self.children:
            child.poll()
        self.children.clear()

    def status(self) -> dict[str, dict[str, bool]]:
        """Per host: is its dockerd running (a systemd host: its container), does its sshd
        answer (and the gateway)?"""
        recorded = LabState.load(self.root / "state.json")
        out: dict[str, dict[str, bool]] = {}
        for host in self.hosts.values():
            mine = [r for r in recorded.procs if r.host == host.name]
            roles = ("nspawn",) if any(r.role == "nspawn" for r in mine) else ("dockerd", "sshd")
            row = {role: any(r.role == role and is_ours(r) for r in mine) for role in roles}
            row["ssh_port"] = port_open(host.address, SSH_PORT)
            if host.spec.gateway:
                row["gateway"] = gateway.wait_ready(self.gateway_url, timeout=1)
            out[host.name] = row
        return out

    # -- using the hosts ----------------------------------------------------------------
    def run(
        self,
        host: str,
        command: str,
        *,
        timeout: float = 120,
        check: bool = False,
        input: str | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run a shell command on a host through real ssh (-F lab.ssh_config)."""
        result = subprocess.run(
            ["ssh", "-F", str(self.ssh_config), host, command],
            capture_output=True,
            text=True,
            timeout=timeout,
            input=input,
        )
        if check and result.returncode != 0:
            raise LabError(
                f"{host}: {command!r} failed ({result.returncode}): "
                f"{result.stderr.strip() or result.stdout.strip()}"
            )
        return result

    def docker(
        self, host: str, *args: str, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """The docker CLI on this machine against a host's engine (test set-up)."""
        env = {**os.environ, "DOCKER_HOST": self.hosts[host].docker_host}
        return subprocess.run(
            ["/usr/bin/docker", *args], capture_output=True, text=True, env=env, timeout=timeout
        )

    def compose_file(self, host: str, project: str) -> Path:
        """Where compose_up puts a project's file (the host sees /srv/fleet/<name>)."""
        return self.hosts[host].compose_dir / f"{project}.compose.yaml"

    def compose_up(
        self, host: str, project: str, compose_text: str, *, wait: bool = True, timeout: float = 180
    ) -> subprocess.CompletedProcess[str]:
        """Write a compose file into the host's /srv/fleet and `docker compose up -d` it there."""
        self.compose_file(host, project).write_text(compose_text)
        command = f"docker compose -p {project} -f /srv/fleet/{project}.compose.yaml up -d"
        if wait:
            command += f" --wait --wait-timeout {int(timeout)}"
        return self.run(host, command, timeout=timeout + 60)

    def compose_down(self, host: str, project: str) -> subprocess.CompletedProcess[str]:
        """Stop and remove a compose project on a host."""
        command = f"docker compose -p {project} down --timeout 0 --remove-orphans"
        return self.run(host, command, timeout=120)

    # -- the gateway ----------------------------------------------------------------
    def gateway_config(self) -> str:
        """The current gateway config text."""
        return self.gateway_config_path.read_text()

    def set_gateway_config(self, text: str) -> None:
        """Replace the gateway config (takes effect at the next restart)."""
        self.gateway_config_path.write_text(text)

    def restart_gateway(self) -> subprocess.CompletedProcess[str]:
        """Run `fleet-gateway-restart` on the gateway host over SSH."""
        host = self.gateway_host
        if host is None:
            raise LabError("this lab has no gateway host")
        return self.run(host.name, "fleet-gateway-restart", timeout=240)

    @property
    def upstream_path(self) -> Path:
        """The front's upstream file (/etc/nginx/fleet/litellm-upstream.conf of the host)."""
        host = self.gateway_host
        if host is None:
            raise LabError("this lab has no gateway host")
        return host.root / "etc-nginx" / "fleet" / "litellm-upstream.conf"

    def front_port(self) -> int | None:
        """The proxy port the front routes to."""
        found = re.search(r"server \S+:(\d+);", self.upstream_path.read_text())
        return int(found.group(1)) if found else None

    def gateway_proxy(self, verb: str, port: int) -> subprocess.CompletedProcess[str]:
        """`fleet-gateway-proxy start|stop PORT` on the gateway host."""
        host = self.gateway_host
        if host is None:
            raise LabError("this lab has no gateway host")
        return self.run(host.name, f"fleet-gateway-proxy {verb} {port}", timeout=240)

    def point_front(self, port: int) -> None:
        """Route the front to the proxy on `port` (upstream file, `nginx -s reload`)."""
        host = self.gateway_host
        if host is None:
            raise LabError("this lab has no gateway host")
        self.upstream_path.write_text(gateway.upstream_text(host.address, port))
        self.run(host.name, "nginx -s reload", check=True)

    # -- failure switches ------------------------------------------------------------
    def fail_nvidia_smi(self, host: str, on: bool = True) -> None:
        """Make nvidia-smi on `host` fail as it does when the driver is gone."""
        flag = self.hosts[host].gpu_dir / "driver-gone"
        if on:
            flag.touch()
        else:
            flag.unlink(missing_ok=True)

    def reset(self) -> None:
        """Back to the state right after `up`: no containers, empty /srv/fleet, the
        initial gateway config (proxy restarted if it had changed), no failure switch."""
        for host in self.hosts.values():
            self.fail_nvidia_smi(host.name, on=False)
            if host.spec.image_tags:
                teardown.clear_engine(host.docker_host)
            for path in host.compose_dir.iterdir():
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path)
                else:
                    path.unlink()
        if self.gateway_host is None:
            return
        for name in ("fleet_keys.json", "fleet_auth.py"):  # the key check apply ships
            (self.gateway_config_path.parent / name).unlink(missing_ok=True)
        initial = self.initial_gateway_config
        changed = self.gateway_config() != initial
        first, second = PROXY_PORTS
        if changed or self.front_port() != first or not gateway.wait_ready(self.gateway_url, 1):
            self.set_gateway_config(initial)
            self.gateway_proxy("start", first)
            self.point_front(first)
            self.gateway_proxy("stop", second)
