"""Blue/green change of a gateway behind its front: no request is lost on any alias.

Called by `reconciler.workflows.gateway.switch_config` when desired/gateway.yaml declares a
`front`. The front (nginx) routes to one of two proxy ports, named in its upstream file;
the sequence is:

1. write the new config, start a second proxy on the other port (`front.start`);
2. wait for its readiness and verify each changed alias on that port directly;
3. point the front's upstream at it and reload the front (graceful);
4. poll through the front (the gateway's URL) until the changed aliases answer;
5. stop the old proxy (`front.stop`: SIGTERM, it finishes what it serves, bounded by
   `front.graceful_shutdown`).

A failure in 1-2 stops the new proxy and puts the previous config text back: the old proxy
never stopped serving. A failure in 3-4 points the front back first. Either way
GatewayError says what failed and that the old proxy still serves.
"""

from __future__ import annotations

import shlex

from fleet.errors import FleetError, GatewayError
from fleet.gateways import kind_of, nginx
from fleet.spec.models import Gateway, GatewayFront
from reconciler.adapters.http import request_via
from reconciler.host import HostSession
from reconciler.workflows import failpoint
from reconciler.workflows.proxy import (
    POLL,
    ConfigChange,
    Endpoint,
    run_checked,
    upload_config,
    url_endpoint,
    verify_aliases,
    wait_ready,
)
from reconciler.workflows.wave_run import Reporter

SETTLE_ANSWERS = 2  # consecutive good answers through the front before the old proxy stops


def switch(change: ConfigChange) -> float:
    """Run the sequence above; the seconds from the new proxy's start to the old one's stop."""
    conn, gateway, reporter, clock = change.conn, change.gateway, change.reporter, change.clock
    front = gateway.front
    assert front is not None
    address = front.proxy_address or url_endpoint(gateway).address
    old_port = live_port(conn, front)
    front_answers(conn, gateway)
    new = Endpoint(address, nginx.other_port(front.proxy_ports, old_port))
    began = clock.monotonic()
    _start_new(change, front, new)
    reporter.step(f"{gateway.host}: point the front at the proxy on :{new.port} (was :{old_port})")
    try:
        point_front(conn, front, new)
        failpoint.hit("gateway.front_switched")
        _settle(change)
    except FleetError as err:
        reporter.step(f"{gateway.host}: point the front back at :{old_port}")
        if _undo_front(conn, front, Endpoint(address, old_port), reporter):
            _abandon(change, front, new)
            where = f"the front points back at the proxy on :{old_port}"
        else:  # the front may serve either proxy now: both keep running, nothing is lost
            where = (
                f"pointing the front back at :{old_port} failed too: both proxies keep "
                "running, and the next apply puts the gateway right"
            )
        raise GatewayError(
            f"through the front after the switch to :{new.port}: {err}; {where}"
        ) from err
    reporter.step(f"{gateway.host}: stop the old proxy on :{old_port}")
    _stop(conn, front, old_port, reporter)
    failpoint.hit("gateway.old_stopped")
    return clock.monotonic() - began


def front_answers(conn: HostSession, gateway: Gateway) -> None:
    """GatewayError unless the front answers on the gateway's URL: a front whose process
    is gone cannot be reloaded onto the new proxy, so the switch must not begin."""
    url = url_endpoint(gateway)
    try:
        request_via(
            conn, url.address, url.port, "GET", kind_of(gateway).readiness_path, timeout=5.0
        )
    except FleetError as err:
        raise GatewayError(
            f"the front at {gateway.url} does not answer ({err.message}): it cannot be "
            "switched to a new proxy; nothing was changed"
        ) from err


def _settle(change: ConfigChange) -> None:
    """Poll through the front until the changed aliases answer SETTLE_ANSWERS times in a
    row: for a moment after the reload, nginx's old workers still send what they hold to
    the old proxy, which does not know a new alias yet."""
    clock, reporter = change.clock, change.reporter
    started, good = clock.monotonic(), 0
    while good < SETTLE_ANSWERS:
        try:
            verify_aliases(change, url_endpoint(change.gateway))
        except GatewayError as err:
            good = 0
            if clock.monotonic() - started > change.timeout:
                raise
            reporter.waiting(f"through the front: {err.message}", clock.monotonic() - started)
            clock.sleep(POLL)
        else:
            good += 1


def live_port(conn: HostSession, front: GatewayFront) -> int:
    """The proxy port the front's upstream file names (GatewayError if it names none)."""
    text = conn.read_file(front.upstream_file)
    port = nginx.live_port(text)
    if port is None:
        state = "does not exist" if text is None else "names no `server ADDR:PORT;`"
        raise GatewayError(f"the front's upstream file {front.upstream_file} {state}")
    if port not in front.proxy_ports:
        raise GatewayError(
            f"the front routes to :{port}, not one of the proxy ports "
            f"{front.proxy_ports[0]} and {front.proxy_ports[1]}"
        )
    return port


def point_front(conn: HostSession, front: GatewayFront, at: Endpoint) -> None:
    """Write the upstream file for `at` and reload the front."""
    conn.write_file_atomic(front.upstream_file, nginx.upstream_text(at.address, at.port))
    run_checked(conn, front.reload, "front reload", 60.0)


def _start_new(change: ConfigChange, front: GatewayFront, new: Endpoint) -> None:
    """Steps 1-2: the new proxy runs the new config and serves every changed alias."""
    conn, gateway, reporter, timeout = change.conn, change.gateway, change.reporter, change.timeout
    run_checked(
        conn, _with_port(front.stop, new.port), "stop of a leftover proxy", _stop_bound(front)
    )
    reporter.step(f"{gateway.host}: start a proxy with the new config on :{new.port}")
    try:
        upload_config(conn, gateway, change.new_text)
        failpoint.hit("gateway.config_written")
        run_checked(conn, _with_port(front.start, new.port), "proxy start", timeout + 60.0)
        wait_ready(conn, kind_of(gateway), new, timeout, change.clock)
        failpoint.hit("gateway.proxy_started")
        reporter.step(f"{gateway.host}: verify {len(change.aliases)} alias(es) on :{new.port}")
        verify_aliases(change, new)
        failpoint.hit("gateway.proxy_verified")
    except FleetError as err:
        _abandon(change, front, new)
        raise GatewayError(
            f"the new proxy on :{new.port}: {err}; the old proxy still serves"
        ) from err


def _abandon(change: ConfigChange, front: GatewayFront, new: Endpoint) -> None:
    """Stop the new proxy and put the previous config text back: each step runs even when
    the other fails, and a failure is reported."""
    conn, gateway, reporter = change.conn, change.gateway, change.reporter
    reporter.step(f"{gateway.host}: stop the new proxy on :{new.port}, previous config back")
    try:
        conn.write_file_atomic(gateway.config_path, change.previous)
    except FleetError as err:
        reporter.step(f"{gateway.host}: could not put the previous config back: {err}")
    _stop(conn, front, new.port, reporter)


def _undo_front(conn: HostSession, front: GatewayFront, old: Endpoint, reporter: Reporter) -> bool:
    """Point the front back at the old proxy; False (reported) when that fails."""
    try:
        point_front(conn, front, old)
    except FleetError as err:
        reporter.step(f"{conn.name}: pointing the front back at {old} failed: {err}")
        return False
    return True


def _stop(conn: HostSession, front: GatewayFront, port: int, reporter: Reporter) -> None:
    """Stop the proxy on `port`; a failure is reported (the live proxy serves regardless)."""
    try:
        run_checked(conn, _with_port(front.stop, port), "proxy stop", _stop_bound(front))
    except FleetError as err:
        reporter.step(f"{conn.name}: could not stop the proxy on :{port}: {err}")


def _stop_bound(front: GatewayFront) -> float:
    return front.graceful_shutdown + 30.0


def _with_port(template: str, port: int) -> str:
    return template.replace("{port}", shlex.quote(str(port)))
