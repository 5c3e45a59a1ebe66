"""The client wave of a plan, on the in-sync fake fleet: each change a client's key needs,
the rotation period, and a key file fleet cannot read."""

from __future__ import annotations

import pytest

from fleet.facts.client_keys import KeyedClient, KeyFile, hash_key
from fleet.observed.models import ObservedClient, ObservedKeys
from fleet.plan.plan import make_plan
from fleet.spec.clients import GatewayClient
from fleet.spec.load import load_fleet
from fleet.spec.models import DesiredFleet
from tests.unit.plan.fakes import in_sync
from tests.unit.spec.test_validate import example_files

KEY = "sk-fleet-" + "k" * 43
WHERE = "tower:/etc/environment LITELLM_API_KEY"
CLIENT = {"aliases": ["chat", "coder"], "delivery": {"host": "tower"}, "rotate_every": "30d"}


def desired(**client: object) -> DesiredFleet:
    loaded = load_fleet(example_files())
    assert loaded.fleet is not None and loaded.fleet.gateway is not None
    gateway = loaded.fleet.gateway.model_copy(
        update={"clients": {"tanko": GatewayClient.model_validate({**CLIENT, **client})}}
    )
    return loaded.fleet.model_copy(update={"gateway": gateway})


def lines(
    fleet: DesiredFleet,
    held: KeyedClient | None,
    delivered: str | None = hash_key(KEY),
    error: str | None = None,
) -> tuple[list[str], list[str]]:
    observation = in_sync(fleet)
    assert observation.gateway is not None
    keys = ObservedKeys(
        file=None if error else KeyFile(clients={"tanko": held} if held else {}),
        error=error,
        module="current",
    )
    observation = observation.model_copy(
        update={
            "gateway": observation.gateway.model_copy(update={"keys": keys}),
            "clients": {"tanko": ObservedClient(name="tanko", where=WHERE, delivered=delivered)},
        }
    )
    plan = make_plan(fleet, observation)
    acts = [f"{a.kind.value} {a.target}: {a.reasons[0]}" for a in plan.actions if a.wave == 4]
    return acts, [b.message for b in plan.blockers]


def held(
    aliases: tuple[str, ...] = ("chat", "coder"), issued: str = "2026-12-01T00:00:00Z", **kw: object
) -> KeyedClient:
    return KeyedClient.model_validate(
        {"aliases": aliases, "hashes": (hash_key(KEY),), "issued": issued, **kw}
    )


CASES = [
    ("in-sync", {}, held(), hash_key(KEY), []),
    ("new", {}, None, None, [f"add-client tanko: key for chat, coder -> {WHERE}"]),
    (
        "aliases",
        {"aliases": ["chat"]},
        held(),
        hash_key(KEY),
        ["update-client tanko: aliases chat, coder -> chat"],
    ),
    (
        "limits",
        {"rpm": 10},
        held(),
        hash_key(KEY),
        ["update-client tanko: limits rpm None, tpm None -> rpm 10, tpm None"],
    ),
    ("missing", {}, held(), None, [f"rekey-client tanko: no key at {WHERE}: a new key -> {WHERE}"]),
    (
        "drifted",
        {},
        held(),
        hash_key("sk-by-hand"),
        [
            f"rekey-client tanko: the key at {WHERE} is not one the gateway holds: "
            f"a new key -> {WHERE}"
        ],
    ),
    (
        "rotation-due",
        {},
        held(issued="2026-10-01T00:00:00Z"),
        hash_key(KEY),
        [f"rekey-client tanko: rotation due (issued 2026-10-01T00:00:00Z) -> {WHERE}"],
    ),
]


@pytest.mark.parametrize(
    ("client", "entry", "seen", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_the_client_wave(
    client: dict[str, object], entry: KeyedClient | None, seen: str | None, expected: list[str]
) -> None:
    assert lines(desired(**client), entry, seen) == (expected, [])


def test_a_key_file_fleet_cannot_read_blocks_the_plan() -> None:
    acts, blockers = lines(desired(), None, error="the key file is not JSON")
    assert acts == [] and blockers == [
        "the key file beside /etc/litellm/config.yaml: the key file is not JSON; fix or remove it"
    ]
