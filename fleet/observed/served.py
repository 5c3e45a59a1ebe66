"""Findings about what is served rather than written: the gateway through its URL, the
proxies behind its front, and seats running twice.

Pure; called by `fleet.observed.findings` (so plan, inventory and check show them) and by
`fleet.plan.served`, which turns them into actions. A config file that differs from what
the proxy behind the URL has loaded, a proxy running beside the live one, a URL that does
not answer, and two running copies of one seat are what an apply killed mid-way leaves;
each is an error until an apply puts it right. Each finding is (kind, target, message).
"""

from __future__ import annotations

from fleet.observed.models import Observation, ObservedGateway

Found = tuple[str, str, str]


def served_findings(observation: Observation) -> list[Found]:
    """Every finding about what the gateway serves and about seats running twice."""
    found = _copies(observation)
    gateway = observation.gateway
    if gateway is None or gateway.served is None or gateway.config is None:
        return found
    target = f"gateway {gateway.host}"
    served = gateway.served
    if not served.url_answers:
        return [
            *found,
            (
                "gateway-not-serving",
                target,
                f"the gateway's URL does not answer: {served.url_error}",
            ),
        ]
    if differs := not_live(gateway):
        found.append(
            ("config-not-live", target, f"{gateway.config_path} is not what is served: {differs}")
        )
    if served.front_port is not None:
        for port in sorted(set(served.proxies) - {served.front_port}):
            found.append(
                (
                    "orphan-proxy",
                    target,
                    f"a proxy runs on :{port} beside the live one on :{served.front_port}",
                )
            )
    return found


def not_live(gateway: ObservedGateway) -> str | None:
    """How the config file differs from what is served through the URL (None: it does
    not, or what is served could not be read)."""
    if gateway.config is None or gateway.served is None or gateway.served.routes is None:
        return None
    routes = gateway.served.routes
    written = gateway.config.by_alias()
    parts = []
    if missing := sorted(set(written) - set(routes)):
        parts.append(f"{', '.join(missing)} not served")
    if extra := sorted(set(routes) - set(written)):
        parts.append(f"{', '.join(extra)} served but not in the file")
    moved = [
        f"{alias} served at {routes[alias]}, written {entry.address}"
        for alias, entry in sorted(written.items())
        if entry.managed and routes.get(alias) and routes[alias] != entry.address
    ]
    return "; ".join(parts + moved) or None


def _copies(observation: Observation) -> list[Found]:
    names = sorted({s.name for h in observation.hosts.values() for s in h.seats if s.managed})
    found = []
    where, running = observation.seat_index(), observation.copies_index()
    for name in names:
        copies = running.get(name, ())
        live = where.get(name)
        if len(copies) < 2 or live is None:
            continue
        others = [f"port {s.port} on {h.name}" for h, s in copies if s is not live[1]]
        found.append(
            (
                "two-copies",
                f"seat {name}",
                f"{len(copies)} copies run; the live one on port {live[1].port} on "
                f"{live[0].name}, the other on {', '.join(others)} (plan removes it)",
            )
        )
    return found
