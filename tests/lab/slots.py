"""Where a lab lives on this machine: its slot, and what follows from it.

Several labs may run on one machine at once (another checkout, CI beside a running
demo), so nothing machine-wide may be shared between them. Each lab has a slot
0..SLOTS-1: `FLEET_LAB_SLOT` (or `python -m tests.lab up --slot N`), else a stable hash
of the lab directory's resolved path (the next free slot if another lab holds that
one, see claims.py). For slot `s` and a host numbered `n` (HostSpec.number, 0..31):

    address        127.<s+1>.0.<last octet of the host's nominal address>  (127.1.0.11)
    bridge         f<s>-<host>                 (at most 15 characters, the kernel's limit)
    host network   /24 number s*32+n of 198.18.0.0/15 (RFC 2544's test range, which
                   no route on a workstation or CI runner claims, and which no earlier
                   lab layout used)
      bridge       .1/25 of it: the engine's default network
      pool         base=.128/25,size=28: the networks compose creates
    run dir        /run/fleet-lab/<s>/<host>  (sockets, pid files)

A host's *nominal* address is the one `desired/` names (127.0.0.11 for tower);
`rewrite_addresses` turns text written for the nominal addresses into a lab's.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network, ip_address
from pathlib import Path

SLOTS = 16
HOSTS_PER_SLOT = 32
LAB_NET = IPv4Network("198.18.0.0/15")
NOMINAL_NET = IPv4Network("127.0.0.0/24")
RUN_ROOT = Path("/run/fleet-lab")
ENV_VAR = "FLEET_LAB_SLOT"
BRIDGE_MAX = 15  # IFNAMSIZ - 1


def check_slot(value: int | str) -> int:
    """A valid slot number, or ValueError naming the range."""
    try:
        number = int(value)
    except ValueError:
        raise ValueError(f"lab slot must be a number 0..{SLOTS - 1}, not {value!r}") from None
    if not 0 <= number < SLOTS:
        raise ValueError(f"lab slot must be between 0 and {SLOTS - 1}, not {number}")
    return number


def slot_from_env() -> int | None:
    """The slot FLEET_LAB_SLOT asks for, if set."""
    value = os.environ.get(ENV_VAR, "").strip()
    return check_slot(value) if value else None


def hashed_slot(root: Path) -> int:
    """The slot a lab directory prefers: stable for its resolved path."""
    digest = hashlib.sha256(str(root.resolve()).encode()).digest()
    return int.from_bytes(digest[:8], "big") % SLOTS


def nominal_octet(address: str) -> int:
    """The last octet of a nominal host address (which must lie in 127.0.0.0/24)."""
    parsed = ip_address(address)
    if not isinstance(parsed, IPv4Address) or parsed not in NOMINAL_NET:
        raise ValueError(f"a lab host's nominal address lies in {NOMINAL_NET}, not {address}")
    octet = int(parsed) & 0xFF
    if not 2 <= octet <= 254:
        raise ValueError(f"nominal address {address}: last octet must be 2..254")
    return octet


@dataclass(frozen=True)
class LabSlot:
    """One slot: the addresses, names, networks and paths a lab in it uses."""

    index: int

    def __post_init__(self) -> None:
        check_slot(self.index)

    def address(self, nominal: str) -> str:
        """The loopback address of the host whose nominal address is `nominal`."""
        return f"127.{self.index + 1}.0.{nominal_octet(nominal)}"

    def bridge(self, host: str) -> str:
        """The kernel bridge of a host's engine."""
        name = f"f{self.index}-{host}"
        if len(name) > BRIDGE_MAX:
            raise ValueError(f"bridge name {name!r} is longer than {BRIDGE_MAX}: shorten {host!r}")
        return name

    @property
    def net(self) -> IPv4Network:
        """Every IPv4 address this slot's engines use (a /19 of LAB_NET)."""
        size = 256 * HOSTS_PER_SLOT
        return IPv4Network(f"{LAB_NET.network_address + self.index * size}/19")

    def host_net(self, number: int) -> IPv4Network:
        """The /24 of host `number` (bridge and compose pool)."""
        if not 0 <= number < HOSTS_PER_SLOT:
            raise ValueError(f"host number must be 0..{HOSTS_PER_SLOT - 1}, not {number}")
        return IPv4Network(f"{self.net.network_address + number * 256}/24")

    def bridge_cidr(self, number: int) -> str:
        """Address of the host's bridge: its engine's default network."""
        return f"{self.host_net(number).network_address + 1}/25"

    def pool(self, number: int) -> IPv4Network:
        """The subnets the host's engine carves compose networks from."""
        return IPv4Network(f"{self.host_net(number).network_address + 128}/25")

    def address_pool(self, number: int) -> str:
        """dockerd's `--default-address-pool` value for host `number`."""
        return f"base={self.pool(number)},size=28"

    @property
    def run_dir(self) -> Path:
        """Sockets and pid files of this slot's hosts (one folder each)."""
        return RUN_ROOT / str(self.index)


def rewrite_addresses(text: str, mapping: Mapping[str, str]) -> str:
    """`text` with every whole occurrence of a key of `mapping` replaced by its value."""
    if not mapping:
        return text
    keys = sorted(mapping, key=len, reverse=True)
    pattern = re.compile(r"(?<![\d.])(" + "|".join(map(re.escape, keys)) + r")(?![\d])")
    return pattern.sub(lambda m: mapping[m.group(1)], text)


def rewrite_tree(directory: Path, mapping: Mapping[str, str]) -> list[Path]:
    """Rewrite the YAML files under `directory` in place; returns those that changed."""
    changed = []
    for path in sorted(directory.rglob("*.y*ml")):
        text = path.read_text()
        new = rewrite_addresses(text, mapping)
        if new != text:
            path.write_text(new)
            changed.append(path)
    return changed
