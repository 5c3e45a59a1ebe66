"""`fleet keys rotate|confirm|revoke`: a gateway client's key, out of the plan's turn.

`rotate CLIENT...` (or `--all`) issues a new key as apply does: its hash joins the
gateway's key file, the key is delivered and verified through the front from the
client's host, then the old hash goes (`reconciler.workflows.client_apply`). A `manual`
client's key is printed once, on a terminal only (never through a pipe, a file or a log),
with the command that confirms its delivery; its old key works until then. `confirm
CLIENT` drops a manual client's older keys. `revoke CLIENT` removes a client's hashes at
once (the next plan issues a new key while desired/ still declares it). The gateway
host is locked meanwhile, as apply locks it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated

import typer

from reconciler.cli.app import DesiredOption, clock_of, open_fleet, output_of, sessions_of
from reconciler.cli.apply import TerminalReporter

if TYPE_CHECKING:
    from pathlib import Path

    from fleet.spec.models import DesiredFleet, Gateway
    from reconciler.cli.output import Output
    from reconciler.host import HostSession, Sessions
    from reconciler.workflows.client_apply import Show

keys_app = typer.Typer(help="Rotate, confirm and revoke gateway clients' keys.")
ClientArgument = Annotated[str, typer.Argument(help="A client of desired/gateway.yaml.")]


@keys_app.command()
def rotate(
    ctx: typer.Context,
    clients: Annotated[list[str] | None, typer.Argument(help="Clients to rotate.")] = None,
    every: Annotated[bool, typer.Option("--all", help="Every client.")] = False,
    desired: DesiredOption = None,
    timeout: Annotated[float, typer.Option(help="Seconds verification may take.")] = 60.0,
) -> None:
    """Issue each client a new key: delivered and verified before the old one is refused."""
    from fleet.errors import FleetError
    from reconciler.workflows.client_apply import KeyOptions, issue

    output = output_of(ctx)
    repo = open_fleet(output, desired)
    gateway = _gateway(repo.desired)
    names = sorted(gateway.clients) if every else sorted(set(clients or ()))
    if not names or (unknown := [n for n in names if n not in gateway.clients]):
        raise FleetError(
            f"no client {unknown[0]!r} in gateway.yaml" if names else "name a client, or --all"
        )
    options = KeyOptions(timeout=timeout, clock=clock_of(ctx), show=terminal_printer(output))
    reporter = TerminalReporter(output)
    with _locked(ctx, repo.desired) as (connections, _):
        rotated = [n for n in names if issue(repo.desired, connections, n, options, reporter)]
    output.line(f"rotated: {', '.join(rotated) or 'none'}")


@keys_app.command()
def confirm(ctx: typer.Context, client: ClientArgument, desired: DesiredOption = None) -> None:
    """A manual client's new key was delivered: refuse its older keys from now on."""
    from reconciler.workflows.client_apply import confirm as confirm_delivery

    with _gateway_locked(ctx, desired) as (output, gateway, conn):
        dropped = confirm_delivery(conn, gateway, client)
    output.line(f"{client}: {'older keys refused' if dropped else 'holds one key: nothing to do'}")


@keys_app.command()
def revoke(ctx: typer.Context, client: ClientArgument, desired: DesiredOption = None) -> None:
    """Refuse a client's keys at once (its hashes leave the gateway's key file)."""
    from reconciler.workflows.client_apply import revoke as revoke_client

    with _gateway_locked(ctx, desired) as (output, gateway, conn):
        revoke_client(conn, gateway, client, TerminalReporter(output))
    output.line(f"{client}: revoked")


def terminal_printer(output: Output) -> Show | None:
    """What prints a manual client's key: straight to stdout when it is a terminal (past
    the redaction every other line goes through), else None: no key is shown."""
    stream = output.stdout.stream
    if not stream.isatty():
        return None

    def show(client: str, key: str) -> None:
        stream.write(
            f"\nclient {client}: its new key, shown this once; deliver it by hand:\n\n"
            f"    {key}\n\nits old key works until: fleet keys confirm {client}\n\n"
        )
        stream.flush()

    return show


def _gateway(desired: DesiredFleet) -> Gateway:
    from fleet.errors import FleetError

    if desired.gateway is None or not desired.gateway.clients:
        raise FleetError("gateway.yaml declares no clients")
    return desired.gateway


@contextmanager
def _gateway_locked(
    ctx: typer.Context, desired: Path | None
) -> Iterator[tuple[Output, Gateway, HostSession]]:
    """What `confirm` and `revoke` work with: the output, desired/'s gateway (it must
    declare clients) and the gateway host's session, under its apply lock."""
    output = output_of(ctx)
    repo = open_fleet(output, desired)
    gateway = _gateway(repo.desired)
    with _locked(ctx, repo.desired) as (_, conn):
        yield output, gateway, conn


@contextmanager
def _locked(ctx: typer.Context, desired: DesiredFleet) -> Iterator[tuple[Sessions, HostSession]]:
    """Sessions, and the gateway host's, under its apply lock."""
    from reconciler.workflows import locks

    gateway = _gateway(desired)
    host = desired.hosts[gateway.host]
    with sessions_of(ctx)(desired) as connections:
        conn = connections.get(gateway.host)
        locks.acquire(conn, host)
        try:
            yield connections, conn
        finally:
            locks.release(conn, host)
