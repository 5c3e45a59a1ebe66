"""`fleet reconcile`: the GitOps loop as a service (or one cycle, for cron, with --once).

Runs from a clone of the fleet repository. Exit codes with --once are plan's (0 in sync,
2 changes pending, 1 error); as a service it runs until SIGTERM or SIGINT, which finish
the current step (an apply in progress included), release the locks and exit 0.
"""

from __future__ import annotations

import json
import signal
from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from reconciler.cli.app import (
    DesiredOption,
    PruneOption,
    app,
    clock_of,
    output_of,
    sessions_of,
)
from reconciler.cli.output import Output


class EventLines:
    """One line per event on stdout: text, or JSON with --log-format json."""

    def __init__(self, output: Output, as_json: bool) -> None:
        self.output, self.as_json = output, as_json

    def emit(self, event: str, **fields: Any) -> None:
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        if self.as_json:
            self.output.raw(
                json.dumps({"at": stamp, "event": event, **fields}, sort_keys=True) + "\n"
            )
            return
        detail = " ".join(f"{k}={v}" for k, v in fields.items() if v not in (None, "", []))
        self.output.line(f"{stamp} {event} {detail}".rstrip())


@app.command()
def reconcile(
    ctx: typer.Context,
    desired: DesiredOption = None,
    interval: Annotated[
        float, typer.Option("--interval", min=1, help="Seconds between cycles.")
    ] = 60.0,
    auto_apply: Annotated[
        bool, typer.Option("--auto-apply", help="Apply new desired/ commits.")
    ] = False,
    self_heal: Annotated[
        bool, typer.Option("--self-heal", help="Restore drift without a new commit.")
    ] = False,
    prune: PruneOption = False,
    listen: Annotated[
        str | None,
        typer.Option("--listen", help="HOST:PORT for /metrics, /healthz and the dashboard page."),
    ] = None,
    once: Annotated[
        bool, typer.Option("--once", help="One cycle, exit with plan's codes.")
    ] = False,
    no_watchdog: Annotated[
        bool, typer.Option("--no-watchdog", help="Never restart a stuck engine.")
    ] = False,
    log_format: Annotated[str, typer.Option("--log-format", help="text or json.")] = "text",
    timeout: Annotated[
        float, typer.Option("--timeout", help="Seconds a seat may take to become healthy.")
    ] = 900.0,
) -> None:
    """Keep the live fleet converged with desired/ in Git: pull, observe, plan, act as told."""
    from fleet.errors import FleetError
    from reconciler.adapters.dashboard import Dashboard
    from reconciler.adapters.metrics import serve
    from reconciler.workflows.desired import desired_dir
    from reconciler.workflows.reconcile import LoopOptions, Reconciler

    if log_format not in ("text", "json"):
        raise FleetError(f"--log-format takes text or json, not {log_format!r}")
    output = output_of(ctx)
    options = LoopOptions(interval, auto_apply, self_heal, prune, not no_watchdog, timeout)
    events = EventLines(output, log_format == "json")
    loop = Reconciler(
        desired_dir(desired),
        options,
        events,
        open_sessions=sessions_of(ctx),
        clock=clock_of(ctx),
        dashboard=Dashboard(refresh=max(int(interval), 5)) if listen else None,
    )
    server = serve(loop.metrics, listen, interval, loop.dashboard) if listen else None
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: loop.stop.set())
    try:
        if once:
            code = loop.cycle()
        else:
            loop.events.emit(
                "started", interval=interval, auto_apply=auto_apply, self_heal=self_heal
            )
            loop.run()
            code = 0
    finally:
        if loop.notifier is not None:
            loop.notifier.drain()
        if server is not None:
            server.shutdown()
            server.server_close()
    loop.events.emit("stopped")
    raise typer.Exit(code)
