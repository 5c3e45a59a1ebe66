"""Offline rules over gateway.yaml's `clients:`: what must hold before a key is issued.

A client's name becomes a key in the gateway's key file and a word in plans, so it has a
name's shape; each alias it may call is routed to a seat; its delivery names a host of
desired/hosts or an ssh_config Host (a hostname's shape: fleet reads no ssh_config from
desired/), a plain absolute file (not the gateway's own config or key files) and a
variable's name; no two clients share one file's variable (each would overwrite the
other's key). Run by `fleet.spec.validate`; each problem names its key.
"""

from __future__ import annotations

from collections.abc import Iterator

from fleet.spec.clients import ClientDelivery, GatewayClient
from fleet.spec.load import Sources
from fleet.spec.models import DesiredFleet
from fleet.spec.problems import Problem
from fleet.spec.shapes import ENV_NAME, HOSTNAME, NAME, host_path_problem

REL = "gateway.yaml"


def check_clients(desired: DesiredFleet, src: Sources) -> Iterator[Problem]:
    """Every client of the gateway: name, aliases, delivery."""
    gateway = desired.gateway
    if gateway is None or not gateway.clients:
        return
    routed = {alias for seat in desired.seats.values() for alias in seat.aliases}
    taken: dict[tuple[str, str, str], str] = {}
    for name, client in sorted(gateway.clients.items()):
        loc = ("clients", name)
        if not NAME.match(name):
            yield src.problem(REL, loc, f"client name {name!r}: letters, digits, '.', '_' and '-'")
        yield from _check_aliases(name, client, routed, src)
        if isinstance(client.delivery, ClientDelivery):
            yield from _check_delivery(desired, name, client.delivery, src)
            where = (client.delivery.host, client.delivery.file, client.delivery.variable)
            first = taken.setdefault(where, name)
            if first != name:
                yield src.problem(
                    REL,
                    (*loc, "delivery"),
                    f"client {name!r} delivers to {client.delivery.where()}, as client "
                    f"{first!r} does: each would overwrite the other's key",
                )


def _check_aliases(
    name: str, client: GatewayClient, routed: set[str], src: Sources
) -> Iterator[Problem]:
    if isinstance(client.aliases, str):
        return
    if not client.aliases:
        yield src.problem(
            REL, ("clients", name, "aliases"), f"client {name!r} may call no alias: name one"
        )
    for index, alias in enumerate(client.aliases):
        if alias not in routed:
            yield src.problem(
                REL,
                ("clients", name, "aliases", index),
                f"client {name!r} names alias {alias!r}, which no seat routes",
            )


def _check_delivery(
    desired: DesiredFleet, name: str, delivery: ClientDelivery, src: Sources
) -> Iterator[Problem]:
    loc = ("clients", name, "delivery")
    if delivery.host not in desired.hosts and not HOSTNAME.match(delivery.host):
        yield src.problem(
            REL,
            (*loc, "host"),
            f"delivery.host {delivery.host!r} is neither a host of desired/hosts nor an "
            "ssh_config Host name",
        )
    if (why := host_path_problem(delivery.file)) is not None:
        yield src.problem(REL, (*loc, "file"), f"delivery.file {delivery.file!r} {why}")
    gateway = desired.gateway
    if gateway is not None and delivery.host == gateway.host:
        config_dir = gateway.config_path.rsplit("/", 1)[0] + "/"
        if delivery.file.startswith(config_dir):
            yield src.problem(
                REL,
                (*loc, "file"),
                f"delivery.file {delivery.file!r} lies beside the gateway's config, where "
                "fleet writes the key file and the auth module",
            )
    if not ENV_NAME.match(delivery.variable):
        yield src.problem(
            REL,
            (*loc, "variable"),
            f"delivery.variable {delivery.variable!r}: letters, digits and '_', "
            "not starting with a digit",
        )
