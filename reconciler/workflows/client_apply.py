"""Apply the client wave: issue, deliver and verify keys; change a client's aliases;
revoke. No proxy restarts: the gateway's key check reads its key file again when it is
replaced.

Called by `reconciler.workflows.apply` (the plan's client actions) and `fleet keys`. A key
is generated here, on the planning machine (`secrets`), and goes to exactly two places:
the client's file on its host (atomically, the file's mode kept, 0600 for a new file)
and, for a `manual` client, the `show` callback (the command line prints it once, to a
terminal only). The gateway learns only its hash. Never in a message, a log or a plan.

Issuing (`add-client`, `rekey-client`): the new hash joins the key file (a rotation keeps
the old one, so the client keeps working while its file changes), the key is delivered,
then verified through the gateway's URL (the front) from the client's host: the key
answers on an allowed alias, is refused (403) on another, and a wrong key is refused
(401). Only then does the old hash go. A failure puts the key file and the client's
file back and fails the apply, which rolls back the rest (`ApplyError`). Revoking removes
the hashes first of all.
"""

from __future__ import annotations

import secrets
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from fleet.errors import ApplyError, FleetError, GatewayError
from fleet.facts.client_keys import KeyFile, env_value, hash_key
from fleet.gateways import kind_of
from fleet.gateways.keyfile import client_entry, with_variable
from fleet.plan.actions import Action, ActionKind, Wave
from fleet.secrets import redact
from fleet.spec.clients import ClientDelivery, GatewayClient
from fleet.spec.models import DesiredFleet, Gateway
from reconciler.adapters.http import request_via
from reconciler.clock import SYSTEM_CLOCK, Clock
from reconciler.host import HostSession, Sessions
from reconciler.workflows.gateway import chats
from reconciler.workflows.key_check import read_keys, set_client, write_keys
from reconciler.workflows.proxy import POLL, url_endpoint
from reconciler.workflows.wave_run import Reporter

KEY_PREFIX = "sk-fleet-"  # the shape fleet.secrets redacts wherever it appears
Show = Callable[[str, str], None]  # (client, key): print a manual client's key, once


@dataclass(frozen=True)
class KeyOptions:
    """How long verification may take, the clock it waits on, and where a manual
    client's key is shown (None: nowhere, so a manual client gets no key here)."""

    timeout: float = 60.0
    clock: Clock = SYSTEM_CLOCK
    show: Show | None = None


def new_key() -> str:
    """A fresh client key: 256 random bits."""
    return KEY_PREFIX + secrets.token_urlsafe(32)


def apply_client_wave(
    desired: DesiredFleet,
    connections: Sessions,
    actions: tuple[Action, ...],
    options: KeyOptions,
    reporter: Reporter,
) -> list[str]:
    """Every client action of a plan, in order; what was done."""
    gateway = desired.gateway
    done: list[str] = []
    for action in (a for a in actions if a.wave is Wave.CLIENTS):
        assert gateway is not None
        name = action.target
        if action.kind is ActionKind.REVOKE_CLIENT:
            revoke(connections.get(gateway.host), gateway, name, reporter)
        elif action.kind is ActionKind.UPDATE_CLIENT:
            update(desired, connections, name, options, reporter)
        elif not issue(desired, connections, name, options, reporter):
            continue
        done.append(f"{action.kind.value.replace('-', ' ')} {name}")
    return done


def revoke(conn: HostSession, gateway: Gateway, name: str, reporter: Reporter) -> None:
    """The client's hashes leave the key file: its key is refused from the next request."""
    reporter.step(f"{gateway.host}: revoke client {name} (its hashes leave the key file)")
    set_client(conn, gateway, name, None)


def issue(
    desired: DesiredFleet,
    connections: Sessions,
    name: str,
    options: KeyOptions,
    reporter: Reporter,
) -> bool:
    """A new key for the client, delivered and verified; the old one revoked after.
    False when a manual client's key has nowhere to be shown (nothing changed)."""
    gateway = desired.gateway
    assert gateway is not None
    client = gateway.clients[name]
    if client.manual and options.show is None:
        reporter.step(
            f"client {name}: its key is delivered by hand; run `fleet keys rotate {name}` "
            "in a terminal to issue it"
        )
        return False
    conn = connections.get(gateway.host)
    before = read_keys(conn, gateway)
    old = before.clients.get(name)
    key, issued = new_key(), datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    kept = old.hashes[-3:] if old is not None else ()
    reporter.step(f"{gateway.host}: add a new key's hash for client {name}")
    set_client(conn, gateway, name, client_entry(client, (*kept, hash_key(key)), issued))
    undo: Callable[[], None] = lambda: None  # noqa: E731
    try:
        if isinstance(client.delivery, ClientDelivery):
            reporter.step(f"client {name}: deliver its key to {client.where()}")
            undo = deliver(connections, client.delivery, key)
        verify(desired, connections, name, key, options, reporter)
    except FleetError as err:
        _put_back(conn, gateway, before, undo, name, reporter)
        raise ApplyError(f"client {name}: {err}") from err
    if client.manual:
        assert options.show is not None
        options.show(name, key)
    if kept and not client.manual:
        reporter.step(f"{gateway.host}: client {name}'s old key is refused from now on")
        set_client(conn, gateway, name, client_entry(client, (hash_key(key),), issued))
    return True


def confirm(conn: HostSession, gateway: Gateway, name: str) -> bool:
    """A manual client's new key was delivered: its older keys are refused from now on
    (False when it holds one key only)."""
    held = read_keys(conn, gateway).clients.get(name)
    if held is None or len(held.hashes) < 2:
        return False
    set_client(conn, gateway, name, held.model_copy(update={"hashes": held.hashes[-1:]}))
    return True


def update(
    desired: DesiredFleet, connections: Sessions, name: str, options: KeyOptions, reporter: Reporter
) -> None:
    """The client's aliases and limits at the gateway, with the keys it holds; verified
    with its delivered key where fleet can read it."""
    gateway = desired.gateway
    assert gateway is not None
    client = gateway.clients[name]
    conn = connections.get(gateway.host)
    before = read_keys(conn, gateway)
    held = before.clients.get(name)
    hashes, issued = (held.hashes, held.issued) if held is not None else ((), None)
    reporter.step(f"{gateway.host}: client {name} may call {', '.join(client.allowed())}")
    set_client(conn, gateway, name, client_entry(client, hashes, issued))
    key = delivered_key(connections, client)
    if key is None or hash_key(key) not in hashes:
        return
    try:
        verify(desired, connections, name, key, options, reporter)
    except FleetError as err:
        _put_back(conn, gateway, before, lambda: None, name, reporter)
        raise ApplyError(f"client {name}: {err}") from err


def delivered_key(connections: Sessions, client: GatewayClient) -> str | None:
    """The key in the client's file, None when fleet cannot read one (manual, gone)."""
    delivery = client.delivery
    if not isinstance(delivery, ClientDelivery):
        return None
    text = connections.get(delivery.host).read_file(delivery.file)
    return env_value(text, delivery.variable) if text is not None else None


def deliver(connections: Sessions, delivery: ClientDelivery, key: str) -> Callable[[], None]:
    """`VARIABLE=key` in the client's file (atomic; the file's mode kept, 0600 for a new
    one); returns what puts the file back as it was."""
    conn = connections.get(delivery.host)
    previous = conn.read_file(delivery.file)
    text = with_variable(previous, delivery.variable, key)
    conn.write_file_atomic(delivery.file, text, 0o600 if previous is None else None)

    def undo() -> None:
        if previous is None:
            conn.check(shlex.join(["rm", "-f", "--", delivery.file]))
        else:
            conn.write_file_atomic(delivery.file, previous)

    return undo


def _put_back(
    conn: HostSession,
    gateway: Gateway,
    before: KeyFile,
    undo: Callable[[], None],
    name: str,
    reporter: Reporter,
) -> None:
    reporter.step(f"client {name}: put its key file entry and its delivered file back")
    steps: list[Callable[[], None]] = [lambda: write_keys(conn, gateway, before), undo]
    for step in steps:
        try:
            step()
        except FleetError as err:
            reporter.step(f"client {name}: could not put it back: {err}")


def verify(
    desired: DesiredFleet,
    connections: Sessions,
    name: str,
    key: str,
    options: KeyOptions,
    reporter: Reporter,
) -> None:
    """Through the gateway's URL from the client's host (the gateway host for a manual
    client): the key answers on an allowed alias, is refused on another, and a wrong key
    is refused. GatewayError naming what failed."""
    gateway = desired.gateway
    assert gateway is not None
    client = gateway.clients[name]
    host = client.delivery.host if isinstance(client.delivery, ClientDelivery) else gateway.host
    conn = connections.get(host)
    routed = sorted({a for seat in desired.seats.values() for a in seat.aliases})
    allowed = [a for a in routed if client.allowed() == ("*",) or a in client.allowed()]
    chat = next((a for a in allowed if chats(desired, a)), None)
    other = next((a for a in routed if a not in allowed), None)
    reporter.step(f"client {name}: verify its key through {gateway.url} from {host}")
    _expect(conn, gateway, key, chat, 200, options, reporter)
    if other is not None:
        _expect(conn, gateway, key, other, 403, options, reporter)
    _expect(conn, gateway, new_key(), chat, 401, options, reporter)


def _expect(
    conn: HostSession,
    gateway: Gateway,
    key: str,
    alias: str | None,
    status: int,
    options: KeyOptions,
    reporter: Reporter,
) -> None:
    """Poll one request through the URL until it answers `status` (`alias` None: the
    model list); GatewayError after the timeout."""
    kind, url = kind_of(gateway), url_endpoint(gateway)
    path, body = kind.chat(alias) if alias is not None else (kind.models_path, None)
    method = "POST" if body is not None else "GET"
    what = f"alias {alias}" if alias else "the model list"
    started, seen = options.clock.monotonic(), ""
    while True:
        try:
            reply = request_via(
                conn, url.address, url.port, method, path, body, 60.0, kind.headers(key)
            )
            if reply.status == status:
                return
            seen = f"HTTP {reply.status}: {redact(reply.body[:160], [key])}"
        except FleetError as err:
            seen = redact(err.message, [key])
        waited = options.clock.monotonic() - started
        if waited > options.timeout:
            raise GatewayError(f"{what} through {gateway.url} wanted HTTP {status}, got {seen}")
        reporter.waiting(f"{what} through {gateway.url}: {seen}", waited)
        options.clock.sleep(POLL)
