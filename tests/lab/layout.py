"""Where a lab's things are: its slot, the hosts' addresses, SSH material, the gateway.

`LabLayout` is the part of `tests.lab.lab.Lab` that only computes places and reads the
files `up` wrote; it starts nothing. The hosts' addresses, bridges, pools and run dirs
follow from the slot (tests/lab/slots.py); `rewrite` and `rewrite_desired` turn text
written for the nominal addresses of desired/ (127.0.0.11 ...) into this lab's.
"""

from __future__ import annotations

from pathlib import Path

from . import gateway, slots
from .hosts import LabHost
from .procs import LabError
from .slots import LabSlot
from .spec import GATEWAY_PORT, HostSpec


class LabLayout:
    """A lab directory, its hosts placed in a slot, and the paths of what `up` writes."""

    def __init__(self, root: Path, specs: tuple[HostSpec, ...], slot: int) -> None:
        self.root = root
        self.specs = specs
        self.place(slot)

    def place(self, slot: int) -> None:
        """Put the hosts where `slot` says (addresses, bridges, pools, run dirs)."""
        self.slot = LabSlot(slot)
        self.hosts: dict[str, LabHost] = {
            s.name: LabHost(s, self.root / "hosts" / s.name, self.slot) for s in self.specs
        }

    # -- addresses -------------------------------------------------------------------
    def address_of(self, host: str) -> str:
        """The loopback address of a host in this lab (sshd, seat ports, the proxy)."""
        return self.hosts[host].address

    @property
    def addresses(self) -> dict[str, str]:
        """Nominal address (as desired/ names it, 127.0.0.11) -> this lab's."""
        return {h.spec.address: h.address for h in self.hosts.values()}

    def rewrite(self, text: str) -> str:
        """Text written for the nominal addresses, with this lab's instead."""
        return slots.rewrite_addresses(text, self.addresses)

    def rewrite_desired(self, directory: Path) -> list[Path]:
        """Point a copy of desired/ (or any YAML tree) at this lab; returns changed files."""
        return slots.rewrite_tree(directory, self.addresses)

    @property
    def initial_gateway_config(self) -> str:
        """The gateway's hand-kept config as `up` and `reset` write it, for this lab."""
        return self.rewrite(gateway.INITIAL_CONFIG)

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

    @property
    def gateway_config_path(self) -> Path:
        """The gateway host's /etc/litellm/config.yaml, seen from this machine."""
        host = self.gateway_host
        if host is None:
            raise LabError("this lab has no gateway host")
        return host.root / "etc-litellm" / "config.yaml"
