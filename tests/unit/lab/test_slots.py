"""Each lab slot has its own addresses, bridges, networks and run paths; a lab's slot
comes from FLEET_LAB_SLOT, the `slot` argument, its recorded state, or its directory."""

from __future__ import annotations

import re
from ipaddress import IPv4Network, ip_address
from itertools import combinations
from pathlib import Path

import pytest

from fleet.spec.load import load_fleet
from tests.lab.lab import Lab
from tests.lab.slots import (
    LAB_NET,
    SLOTS,
    LabSlot,
    check_slot,
    hashed_slot,
    rewrite_addresses,
)
from tests.lab.spec import HostSpec
from tests.lab.state import LabState

DESIRED = Path(__file__).resolve().parents[3] / "desired"


def footprint(lab: Lab) -> dict[str, set[str]]:
    """Every machine-wide name a lab's hosts use."""
    hosts = lab.hosts.values()
    return {
        "addresses": {h.address for h in hosts},
        "bridges": {h.bridge for h in hosts},
        "run_dirs": {str(h.run_dir) for h in hosts},
        "networks": {str(h.slot.host_net(h.spec.number)) for h in hosts},
    }


def networks(lab: Lab) -> list[IPv4Network]:
    """The bridge networks and compose pools of a lab's hosts."""
    out = []
    for host in lab.hosts.values():
        out.append(IPv4Network(host.bridge_cidr, strict=False))
        out.append(IPv4Network(host.pool))
    return out


def two_dirs(base: Path) -> tuple[Path, Path]:
    """Two lab directories whose hashed slots differ."""
    first = base / "lab-a"
    other = next(
        p for p in (base / f"lab-{n}" for n in range(100)) if hashed_slot(p) != hashed_slot(first)
    )
    return first, other


def test_two_lab_dirs_get_disjoint_addresses_bridges_pools_and_run_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FLEET_LAB_SLOT", raising=False)
    one, two = (Lab(root=d) for d in two_dirs(tmp_path))
    assert one.slot != two.slot
    a, b = footprint(one), footprint(two)
    for kind in a:
        assert not a[kind] & b[kind], kind
    assert not any(x.overlaps(y) for x in networks(one) for y in networks(two))
    assert {h.name for h in one.hosts.values()} == {h.name for h in two.hosts.values()}


@pytest.mark.parametrize(("s", "t"), list(combinations(range(SLOTS), 2)))
def test_every_pair_of_slots_is_disjoint_for_the_largest_lab(s: int, t: int) -> None:
    one = Lab(root=Path("/nonexistent/a"), gpu_hosts=16, slot=s)
    two = Lab(root=Path("/nonexistent/b"), gpu_hosts=16, slot=t)
    a, b = footprint(one), footprint(two)
    for kind in a:
        assert not a[kind] & b[kind], kind
    assert not one.slot.net.overlaps(two.slot.net)


@pytest.mark.parametrize("slot", range(SLOTS))
def test_a_slot_stays_in_its_ranges_and_its_hosts_apart(slot: int) -> None:
    lab = Lab(root=Path("/nonexistent/lab"), gpu_hosts=16, slot=slot)
    lab_nets = networks(lab)
    assert all(n.subnet_of(lab.slot.net) and n.subnet_of(LAB_NET) for n in lab_nets)
    assert not any(x.overlaps(y) for x, y in combinations(lab_nets, 2))
    docker_defaults = (IPv4Network("172.16.0.0/12"), IPv4Network("192.168.0.0/16"))
    assert not any(n.overlaps(d) for n in lab_nets for d in docker_defaults)
    for host in lab.hosts.values():
        address = ip_address(host.address)
        assert address in IPv4Network("127.0.0.0/8")
        assert address not in IPv4Network("127.0.0.0/16"), "never the nominal addresses"
        assert len(host.bridge) <= 15
        assert host.run_dir.parent == Path(f"/run/fleet-lab/{slot}")


def test_fleet_lab_slot_overrides_the_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, _ = two_dirs(tmp_path)
    wanted = (hashed_slot(first) + 5) % SLOTS
    monkeypatch.setenv("FLEET_LAB_SLOT", str(wanted))
    lab = Lab(root=first)
    assert lab.requested_slot == wanted and lab.slot.index == wanted
    assert lab.address_of("tower") == f"127.{wanted + 1}.0.11"
    assert Lab(root=first, slot=2).slot.index == 2, "an explicit slot beats the variable"
    monkeypatch.setenv("FLEET_LAB_SLOT", str(SLOTS))
    with pytest.raises(ValueError, match="between 0 and"):
        Lab(root=first)


def test_a_lab_that_is_up_stays_where_its_state_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FLEET_LAB_SLOT", raising=False)
    root = tmp_path / "lab"
    recorded = (hashed_slot(root) + 3) % SLOTS
    LabState(root / "state.json", slot=recorded).save()
    assert Lab(root=root).slot.index == recorded
    monkeypatch.setenv("FLEET_LAB_SLOT", str((recorded + 1) % SLOTS))
    assert Lab(root=root).slot.index == recorded, "for down/status/run: where it is"


def test_the_hashed_slot_is_stable_for_the_resolved_path(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert hashed_slot(tmp_path / "real") == hashed_slot(tmp_path / "link")
    assert hashed_slot(tmp_path / "real") == hashed_slot(tmp_path / "real" / ".." / "real")


@pytest.mark.parametrize("value", ["-1", "16", "x", ""])
def test_bad_slots_are_refused(value: str) -> None:
    with pytest.raises(ValueError):
        check_slot(value)


def test_long_host_names_and_foreign_addresses_are_refused() -> None:
    with pytest.raises(ValueError, match="longer than 15"):
        LabSlot(12).bridge("a-very-long-host")
    with pytest.raises(ValueError, match=re.escape("127.0.0.0/24")):
        HostSpec("odd", "10.0.0.5", 1)
    with pytest.raises(ValueError, match="host number"):
        HostSpec("odd", "127.0.0.50", 32)


def test_rewrite_replaces_whole_addresses_only() -> None:
    mapping = {"127.0.0.11": "127.5.0.11", "127.0.0.1": "127.5.0.1"}
    text = "a 127.0.0.11:2222 b http://127.0.0.1/ c 127.0.0.111 d 1127.0.0.11 e [127.0.0.11]"
    assert rewrite_addresses(text, mapping) == (
        "a 127.5.0.11:2222 b http://127.5.0.1/ c 127.0.0.111 d 1127.0.0.11 e [127.5.0.11]"
    )


def test_a_rewritten_desired_names_only_the_lab(tmp_path: Path) -> None:
    lab = Lab(root=tmp_path / "lab", slot=9)
    copy = tmp_path / "desired"
    files = {p.relative_to(DESIRED).as_posix(): p.read_text() for p in DESIRED.rglob("*.yaml")}
    for rel, text in files.items():
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        (copy / rel).write_text(text)
    changed = lab.rewrite_desired(copy)
    assert {p.name for p in changed} == {"tower.yaml", "rig.yaml", "gateway.yaml"}
    rewritten = {p.relative_to(copy).as_posix(): p.read_text() for p in copy.rglob("*.yaml")}
    assert not any("127.0.0." in text for text in rewritten.values())
    fleet = load_fleet(rewritten).fleet
    assert fleet is not None
    assert {n: h.address for n, h in fleet.hosts.items()} == {
        n: lab.address_of(n) for n in ("tower", "rig", "gateway")
    }
    assert lab.gateway_url in rewritten["gateway.yaml"]
    assert "127.0.0.11" not in lab.initial_gateway_config
    assert f"http://{lab.address_of('tower')}:8098/v1" in lab.initial_gateway_config
