"""Indexed lookups answer what a scan answers: where a seat runs, which aliases reach it.

`Observation.seat` and `ObservedHost.seat` keep an index built once per set of hosts or
seats; every way an observation is changed in tests and workflows (a copy with new hosts,
a host replaced in place, a seat on two hosts, an unmanaged namesake) must still give the
answer of the plain scan. The inventory's aliases per seat, indexed by address and port,
are those whose api_base names that seat's host and port.
"""

from __future__ import annotations

import pytest

from fleet.observed.gateway_config import GatewayEntry
from fleet.observed.models import Observation, ObservedHost, ObservedSeat
from fleet.report.inventory import build_inventory
from tests.unit.plan.fakes import in_sync
from tests.unit.render.test_compose import example


def scan_host(host: ObservedHost, name: str) -> ObservedSeat | None:
    return next((s for s in host.seats if s.managed and s.name == name), None)


def scan(observation: Observation, name: str) -> tuple[ObservedHost, ObservedSeat] | None:
    for host in observation.hosts.values():
        found = scan_host(host, name)
        if found is not None:
            return host, found
    return None


def assert_lookups_equal_scans(observation: Observation) -> None:
    names = {s.name for h in observation.hosts.values() for s in h.seats} | {"nope"}
    for name in sorted(names):
        assert observation.seat(name) == scan(observation, name), name
        for host in observation.hosts.values():
            assert host.seat(name) is scan_host(host, name), (host.name, name)


def test_lookups_equal_scans_on_the_example_fleet() -> None:
    assert_lookups_equal_scans(in_sync(example()))


def test_a_copy_with_other_hosts_is_indexed_anew() -> None:
    live = in_sync(example())
    assert live.seat("coder") is not None
    tower = live.hosts["tower"]
    emptied = tower.model_copy(update={"seats": ()})
    moved = live.model_copy(update={"hosts": {**live.hosts, "tower": emptied}})
    assert emptied.seat("coder") is None
    assert moved.seat("coder") is None
    assert live.seat("coder") == scan(live, "coder")
    assert_lookups_equal_scans(moved)
    assert_lookups_equal_scans(live)


def test_a_host_replaced_in_place_is_seen() -> None:
    live = in_sync(example())
    tower = live.hosts["tower"]
    assert live.seat("coder") is not None
    live.hosts["tower"] = tower.model_copy(update={"seats": ()})
    assert live.seat("coder") is None
    live.hosts["tower"] = tower
    assert live.seat("coder") == (tower, tower.seat("coder"))


def test_a_seat_on_two_hosts_is_found_where_the_scan_finds_it() -> None:
    live = in_sync(example())
    rig, tower = live.hosts["rig"], live.hosts["tower"]
    coder = tower.seat("coder")
    assert coder is not None
    unmanaged = coder.model_copy(update={"managed": False})
    rig = rig.model_copy(update={"seats": (unmanaged, *rig.seats, coder)})
    hosts = {"rig": rig} | {name: h for name, h in live.hosts.items() if name != "rig"}
    twice = live.model_copy(update={"hosts": hosts})
    assert twice.seat("coder") == (rig, coder)
    assert_lookups_equal_scans(twice)


def test_the_index_is_not_part_of_the_value() -> None:
    live, fresh = in_sync(example()), in_sync(example())
    live.seat("coder")
    live.hosts["tower"].seat("coder")
    assert live == fresh
    assert live.model_dump() == fresh.model_dump()
    assert live.hosts["tower"] == fresh.hosts["tower"]


def inventory_aliases(
    extra: tuple[GatewayEntry, ...] = (),
) -> dict[tuple[str, str], tuple[str, ...]]:
    """(host, seat) -> the aliases the inventory lists, with `extra` gateway entries added."""
    desired = example()
    live = in_sync(desired)
    assert live.gateway is not None and live.gateway.config is not None
    config = live.gateway.config.model_copy(
        update={"entries": (*live.gateway.config.entries, *extra)}
    )
    live = live.model_copy(update={"gateway": live.gateway.model_copy(update={"config": config})})
    return {
        (h.name, s.seat): s.aliases for h in build_inventory(desired, live).hosts for s in h.seats
    }


def test_every_seat_lists_the_aliases_routed_to_it() -> None:
    assert inventory_aliases() == {
        ("rig", "llama8b"): ("llama8b",),
        ("rig", "llama8b-sgl"): ("llama8b-sgl",),
        ("tower", "char-rp"): ("char-rp", "roleplay"),
        ("tower", "coder"): ("autocomplete", "coder"),
        ("tower", "embed"): ("embed",),
        ("tower", "flash"): ("flash", "summarizer"),
        ("tower", "reason"): ("assistant", "chat", "reason"),
        ("tower", "rerank"): ("rerank",),
        ("tower", "sec"): ("sec", "sec-reasoning"),
    }


# An entry is routed to a seat by its api_base's address (the host's name, address or
# publish address) and port; the path does not matter.
ROUTES = [
    ("host-name", "http://tower:8030/v1", [("tower", "coder")]),
    ("host-address", "http://127.0.0.12:8050/v1", [("rig", "llama8b")]),
    ("other-path", "http://127.0.0.11:8030/v2", [("tower", "coder")]),
    ("no-port", "http://127.0.0.11/v1", []),
    ("no-api-base", None, []),
    ("port-on-another-host", "http://127.0.0.12:8030/v1", []),
    ("any-address-is-no-host", "http://0.0.0.0:8030/v1", []),
]


@pytest.mark.parametrize(("api_base", "seats"), [c[1:] for c in ROUTES], ids=[c[0] for c in ROUTES])
def test_an_entry_is_listed_on_the_seat_at_its_address_and_port(
    api_base: str | None, seats: list[tuple[str, str]]
) -> None:
    rows = inventory_aliases((GatewayEntry(alias="extra", address=api_base),))
    assert sorted(seat for seat, aliases in rows.items() if "extra" in aliases) == seats
    assert {k: tuple(a for a in v if a != "extra") for k, v in rows.items()} == (
        inventory_aliases()
    ), "the other aliases stay where they were"
