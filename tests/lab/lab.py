"""The lab's Python API: simulated GPU hosts on loopback for the integration tests.

    lab = Lab()                  # tower, rig, gateway (Lab(gpu_hosts=8): bench-1..8 + gateway)
    lab.up()                     # cleans leftovers first; under a minute
    lab.run("tower", "nvidia-smi -L")          # through real ssh -F <lab.ssh_config>
    lab.compose_up("tower", "demo", compose_text)
    lab.set_gateway_config(text); lab.restart_gateway()
    lab.down()                   # no process, bridge, mount or network left

See tests/lab/README.md for the whole surface.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from . import gateway, teardown
from .bringup import bring_up, port_open
from .hosts import LabHost
from .procs import LabError, is_ours
from .spec import GATEWAY_PORT, SSH_PORT, HostSpec, bench_hosts, default_hosts
from .state import LabState

REPO = Path(__file__).resolve().parents[2]


class Lab:
    """A set of simulated hosts with real sshd, Docker engines and a LiteLLM proxy."""

    def __init__(
        self,
        root: Path | None = None,
        hosts: tuple[HostSpec, ...] | None = None,
        gpu_hosts: int | None = None,
    ) -> None:
        self.root = Path(root or os.environ.get("FLEET_LAB_DIR") or REPO / ".lab").resolve()
        specs = hosts or (bench_hosts(gpu_hosts) if gpu_hosts else default_hosts())
        self.hosts: dict[str, LabHost] = {
            s.name: LabHost(s, self.root / "hosts" / s.name) for s in specs
        }
        self.corpus = Path(os.environ.get("FLEET_LAB_CORPUS") or REPO / "tests" / "corpus")
        self.children: list[subprocess.Popen[bytes]] = []
        self.state = LabState(self.root / "state.json")

    # -- where things are -------------------------------------------------------------
    @property
    def ssh_dir(self) -> Path:
        """Generated SSH material."""
        return self.root / "ssh"

    @property
    def ssh_config(self) -> Path:
        """ssh_config with a Host block per simulated host (FLEET_SSH_CONFIG)."""
        return self.ssh_dir / "config"

    @property
    def known_hosts(self) -> Path:
        """The hosts' pinned host keys."""
        return self.ssh_dir / "known_hosts"

    @property
    def client_key(self) -> Path:
        """The generated client private key."""
        return self.ssh_dir / "id_ed25519"

    @property
    def home(self) -> Path:
        """A HOME whose ~/.ssh holds the config and known_hosts (for docker's ssh://)."""
        return self.root / "home"

    @property
    def env_file(self) -> Path:
        """Shell file exporting FLEET_SSH_CONFIG and LITELLM_MASTER_KEY."""
        return self.root / "env"

    @property
    def master_key(self) -> str:
        """The gateway's generated master key."""
        for line in self.env_file.read_text().splitlines():
            if line.startswith("export LITELLM_MASTER_KEY="):
                return line.split("=", 1)[1]
        raise LabError(f"no LITELLM_MASTER_KEY in {self.env_file}")

    @property
    def gateway_host(self) -> LabHost | None:
        """The host that runs the LiteLLM proxy."""
        return next((h for h in self.hosts.values() if h.spec.gateway), None)

    @property
    def gateway_url(self) -> str:
        """Base URL of the LiteLLM proxy."""
        host = self.gateway_host
        if host is None:
            raise LabError("this lab has no gateway host")
        return f"http://{host.address}:{GATEWAY_PORT}"

    def env(self) -> dict[str, str]:
        """What fleet reads from the environment to use this lab."""
        return {
            "FLEET_SSH_CONFIG": str(self.ssh_config),
            "LITELLM_MASTER_KEY": self.master_key,
            "FLEET_LAB_DIR": str(self.root),
            "FLEET_LAB_HOME": str(self.home),
        }

    # -- life cycle -------------------------------------------------------------------
    @contextmanager
    def locked(self, timeout: float = 1800.0) -> Iterator[None]:
        """Hold the lab for this process (other test sessions wait for their turn)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with (self.root / "lock").open("w") as handle:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise LabError(f"lab {self.root} busy for {timeout:.0f}s") from None
                    time.sleep(1)
            yield

    def up(self) -> None:
        """Bring the lab up from whatever state the machine is in (under `locked()` or not)."""
        self.root.mkdir(parents=True, exist_ok=True)
        self.down()
        self.state = LabState(self.root / "state.json")
        try:
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
        """Per host: is its dockerd running, does its sshd answer (and the gateway)?"""
        recorded = LabState.load(self.root / "state.json")
        out: dict[str, dict[str, bool]] = {}
        for host in self.hosts.values():
            mine = [r for r in recorded.procs if r.host == host.name]
            row = {
                role: any(r.role == role and is_ours(r) for r in mine)
                for role in ("dockerd", "sshd")
            }
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
    @property
    def gateway_config_path(self) -> Path:
        """The gateway host's /etc/litellm/config.yaml, seen from this machine."""
        host = self.gateway_host
        if host is None:
            raise LabError("this lab has no gateway host")
        return host.root / "etc-litellm" / "config.yaml"

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
        changed = self.gateway_config() != gateway.INITIAL_CONFIG
        if changed or not gateway.wait_ready(self.gateway_url, timeout=1):
            self.set_gateway_config(gateway.INITIAL_CONFIG)
            self.restart_gateway()
