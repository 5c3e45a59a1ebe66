"""Gateway operations: put a new config live (blue/green behind a front, else in place),
verify aliases, and what both need (the key, the upload, readiness, an in-place restart).

Used by apply, its rollback and seat surges: `switch_config` is the one entry point that
changes what the gateway routes; it returns the previous config text, and calling it
again with that text is the rollback. Every request goes through the host seam, from the
gateway host (`reconciler.adapters.http.request_via`), and every wait polls a `Clock`.
The master key comes from the environment variable that desired/gateway.yaml references
(`${LITELLM_MASTER_KEY}`) and never reaches any output.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from functools import partial

from fleet.engines import engine_for
from fleet.errors import FleetError, GatewayError
from fleet.spec.models import DesiredFleet, Gateway
from reconciler.adapters import environment
from reconciler.clock import SYSTEM_CLOCK, Clock
from reconciler.host import HostSession, Sessions
from reconciler.runtimes import adapter_for
from reconciler.workflows import bluegreen, locks
from reconciler.workflows.key_check import ensure_key_check
from reconciler.workflows.proxy import (
    ConfigChange,
    run_checked,
    upload_config,
    url_endpoint,
    verify_aliases,
)
from reconciler.workflows.wave_run import Reporter


def master_key(gateway: Gateway) -> str | None:
    """The proxy's key from the environment; GatewayError if the variable is unset."""
    if gateway.master_key is None:
        return None
    return environment.resolve(
        gateway.master_key, "gateway master_key", "the gateway's master key", GatewayError
    )


def chats(desired: DesiredFleet, alias: str) -> bool:
    """Whether an alias's seat answers chat completions (pooling seats do not)."""
    seat = next((s for s in desired.seats.values() if alias in s.aliases), None)
    return seat is not None and engine_for(seat.engine).serves_chat(seat)


def switch_config(
    sessions: Sessions,
    desired: DesiredFleet,
    new_text: str,
    changed_aliases: Collection[str],
    timeout: float,
    reporter: Reporter,
    clock: Clock = SYSTEM_CLOCK,
) -> str:
    """Put `new_text` live as the gateway config and verify `changed_aliases` (each is
    listed; those whose seat chats answer one short completion). Blue/green behind the
    front when gateway.yaml declares one (no request lost), else upload and restart in
    place. On failure the previous config serves again and GatewayError says why.
    Returns the previous config text: `switch_config` with it is the rollback."""
    gateway = desired.gateway
    if gateway is None:
        raise GatewayError("desired/ has no gateway.yaml")
    conn = sessions.get(gateway.host)
    previous = conn.read_file(gateway.config_path)
    if previous is None:
        raise GatewayError(f"{gateway.config_path} vanished from {gateway.host}")
    aliases = {alias: chats(desired, alias) for alias in sorted(changed_aliases)}
    key = master_key(gateway)
    ensure_key_check(conn, gateway, new_text)
    step: Callable[[ConfigChange], float] = bluegreen.switch
    if gateway.front is None:
        step = partial(restart_in_place, command=restart_command(desired, gateway))
    seconds = step(
        ConfigChange(conn, gateway, previous, new_text, aliases, key, timeout, reporter, clock)
    )
    if gateway.host in desired.hosts:
        locks.record(
            conn,
            desired.hosts[gateway.host],
            "gateway",
            aliases=",".join(sorted(aliases)),
            how="blue-green" if gateway.front is not None else "in-place",
            seconds=f"{seconds:.1f}",
        )
    return previous


def restart_in_place(change: ConfigChange, command: str) -> float:
    """Upload, restart the proxy in place (`command`) and verify through the URL: every
    alias is down while it restarts. On failure the previous text goes back (restarted).
    Returns the seconds from the restart until the proxy answered again."""
    conn, gateway, reporter, clock = change.conn, change.gateway, change.reporter, change.clock
    upload_config(conn, gateway, change.new_text)
    reporter.step(f"{gateway.host}: restart the gateway in place")
    began = clock.monotonic()
    try:
        restart(conn, command)
        verify_aliases(change, url_endpoint(gateway))
    except FleetError:
        reporter.step(f"{gateway.host}: put the previous gateway config back")
        conn.write_file_atomic(gateway.config_path, change.previous)
        try:
            restart(conn, command)
        except FleetError as err:
            reporter.step(f"{gateway.host}: the restart of the previous config failed: {err}")
        raise
    return clock.monotonic() - began


def restart_command(desired: DesiredFleet, gateway: Gateway) -> str:
    """The command that restarts the proxy the way gateway.yaml says: its instance, by the
    gateway host's runtime, or its own command."""
    if gateway.restart is None:
        raise GatewayError("gateway.yaml says no restart: for a gateway without a front")
    if gateway.restart.instance:
        host = desired.hosts[gateway.host]
        return adapter_for(host).restart_command(gateway.restart.instance)
    return str(gateway.restart.command)


def restart(conn: HostSession, command: str) -> None:
    """Restart the proxy with `command`; GatewayError if it fails."""
    run_checked(conn, command, "gateway restart", 300.0)
