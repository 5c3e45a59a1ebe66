"""Talking to a gateway proxy from the gateway host: readiness, the aliases it serves.

Used by `reconciler.workflows.gateway` (in place) and `reconciler.workflows.bluegreen`
(a new proxy on its own port, then through the front). Every request goes through the
host seam (`reconciler.adapters.http.request_via` from the gateway host, so the proxy is
reached as the front reaches it), every wait polls a `Clock`; what to ask comes from the
gateway's kind (`fleet.gateways`).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from fleet.errors import FleetError, GatewayError
from fleet.gateways import GatewayKind, kind_of
from fleet.spec.models import Gateway
from reconciler.adapters.http import request_via
from reconciler.clock import Clock
from reconciler.host import HostSession
from reconciler.workflows.wave_run import Reporter

POLL = 1.0


@dataclass(frozen=True)
class Endpoint:
    """Where a proxy answers, as the gateway host reaches it."""

    address: str
    port: int

    def __str__(self) -> str:
        return f"{self.address}:{self.port}"


def url_endpoint(gateway: Gateway) -> Endpoint:
    """The gateway's URL (its front, if it has one) as an address and port."""
    parts = urlsplit(gateway.url)
    if parts.hostname is None:
        raise GatewayError(f"gateway url {gateway.url!r} names no host")
    return Endpoint(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))


def upload_config(conn: HostSession, gateway: Gateway, text: str) -> None:
    """Write the config atomically, keeping its mode; the previous one stays as
    <path>.fleet-prev, with the config's mode (it may hold the same provider keys)."""
    previous = conn.read_file(gateway.config_path)
    if previous is not None:
        prev = gateway.config_path + ".fleet-prev"
        conn.write_file_atomic(prev, previous, mode_of=gateway.config_path)
    conn.write_file_atomic(gateway.config_path, text)


def run_checked(conn: HostSession, command: str, what: str, timeout: float) -> None:
    """Run a command of the proxy's (start, stop, restart) or the front's (reload) on the
    gateway host; GatewayError naming `what` and the last line it printed if it fails."""
    result = conn.run(command, timeout=timeout)
    if result.exit_status != 0:
        reason = (result.stderr.strip() or result.stdout.strip() or "no output").splitlines()
        raise GatewayError(f"{what} (`{command}`) failed: {reason[-1]}")


def wait_ready(
    conn: HostSession, kind: GatewayKind, at: Endpoint, timeout: float, clock: Clock
) -> None:
    """Poll the proxy's readiness path at `at` until it answers 200 (GatewayError after
    `timeout` seconds)."""
    started = clock.monotonic()
    while True:
        try:
            status = request_via(conn, at.address, at.port, "GET", kind.readiness_path).status
            reason = f"HTTP {status}"
        except FleetError as err:
            status, reason = 0, err.message
        if status == 200:
            return
        if clock.monotonic() - started > timeout:
            raise GatewayError(f"the proxy on {at} is not ready after {timeout:.0f}s ({reason})")
        clock.sleep(POLL)


@dataclass(frozen=True)
class ConfigChange:
    """One change of the gateway's config on its way live, as each way of putting it live
    takes it (blue/green behind the front, or in place): the gateway host's session, the
    config text before and after, the changed aliases (True: its seat chats, so verifying
    asks it one completion), the proxy's key, the bound of each wait, where progress goes
    and the clock waits poll."""

    conn: HostSession
    gateway: Gateway
    previous: str
    new_text: str
    aliases: dict[str, bool]
    key: str | None
    timeout: float
    reporter: Reporter
    clock: Clock


def verify_aliases(change: ConfigChange, at: Endpoint) -> None:
    """The proxy at `at` lists every changed alias (polled until the change's timeout);
    those that chat answer one short completion."""
    conn, gateway, aliases, key = change.conn, change.gateway, change.aliases, change.key
    timeout, reporter, clock = change.timeout, change.reporter, change.clock
    kind = kind_of(gateway)
    headers = kind.headers(key)
    started = clock.monotonic()
    while True:
        try:
            reply = request_via(conn, at.address, at.port, "GET", kind.models_path, headers=headers)
        except FleetError as err:  # the proxy may still be starting
            listed, reason = set(), err.message
        else:
            listed = kind.listed(reply.json()) if reply.status == 200 else set()
            reason = f"proxy on {at} lists {len(listed & set(aliases))}/{len(aliases)} aliases"
        if set(aliases) <= listed:
            break
        if clock.monotonic() - started > timeout:
            raise GatewayError(
                f"after {timeout:.0f}s the proxy on {at} does not list "
                f"{', '.join(sorted(set(aliases) - listed))} ({reason})"
            )
        reporter.waiting(reason, clock.monotonic() - started)
        clock.sleep(POLL)
    for alias, chat in sorted(aliases.items()):
        if chat:
            _chat(conn, kind, at, alias, headers)


def _chat(
    conn: HostSession, kind: GatewayKind, at: Endpoint, alias: str, headers: dict[str, str]
) -> None:
    path, body = kind.chat(alias)
    reply = request_via(conn, at.address, at.port, "POST", path, body, 60.0, headers)
    if reply.status != 200:
        raise GatewayError(
            f"alias {alias}: a chat completion on {at} answered "
            f"HTTP {reply.status}: {reply.body[:160]}"
        )
