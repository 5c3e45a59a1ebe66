"""`fleet status` and `fleet serve`: the live fleet at a glance, in a terminal or a browser.

Both are read-only: one observation per refresh (one round trip per host, the engines'
gauges read in it) and a plan made from it, as `fleet plan` makes one. `status` prints
the text (`--json`: the document `fleet schema status` describes; `--watch`: redrawn in
place every `--interval` seconds with rich's Live until Ctrl-C); exit 1 when a host could
not be reached (the rest is still shown). `serve` keeps the dashboard page up to date
and serves it on `--listen` only (loopback unless told otherwise), until SIGTERM or
Ctrl-C; `fleet reconcile --listen` serves the same page from its own cycles.
"""

from __future__ import annotations

import signal
import threading
from typing import TYPE_CHECKING, Annotated

import typer

from reconciler.cli.app import (
    DesiredOption,
    JsonOption,
    app,
    clock_of,
    context_of,
    open_fleet,
    output_of,
    sessions_of,
)

if TYPE_CHECKING:
    from rich.text import Text

IntervalOption = Annotated[
    float, typer.Option("--interval", min=1, help="Seconds between refreshes.")
]
RoundsOption = Annotated[int, typer.Option("--rounds", hidden=True, help="Stop after N rounds.")]


def styled(text: str) -> Text:
    """The status text with what needs a look in colour (as text: no markup is read)."""
    from rich.text import Text

    shown = Text(text)
    shown.highlight_words(("critical", "DEAD", "OUT", "unreachable", "error "), "bold red")
    shown.highlight_words(("warning",), "yellow")
    shown.highlight_regex(r"#+", "green")
    return shown


@app.command()
def status(
    ctx: typer.Context,
    desired: DesiredOption = None,
    as_json: JsonOption = False,
    watch: Annotated[
        bool, typer.Option("--watch", help="Refresh in place every --interval seconds.")
    ] = False,
    interval: IntervalOption = 5.0,
    rounds: RoundsOption = 0,
) -> None:
    """The live fleet at a glance: GPUs, seats, requests, KV use, bench, aliases, findings."""
    from fleet.report.status_text import render_text
    from reconciler.workflows.status import gather_status

    output = output_of(ctx)
    repo = open_fleet(output, desired)
    context = context_of(ctx)
    with context.open_sessions(repo.desired, warm=True) as sessions:
        if not watch:
            with output.progress(f"observing {len(repo.desired.hosts)} hosts"):
                found, _ = gather_status(repo, sessions)
            if as_json:
                output.json(found.model_dump(mode="json"))
            elif output.stdout.isatty():
                output.out.print(styled(render_text(found)))
            else:
                output.raw(render_text(found))
            unreachable = [h for h in found.hosts if not h.reachable]
            for host in unreachable:
                output.error(f"{host.name}: {host.error}")
            raise typer.Exit(1 if unreachable else 0)
        from rich.live import Live
        from rich.text import Text

        stop, done = threading.Event(), 0
        for sig in (signal.SIGTERM, signal.SIGINT):  # Ctrl-C ends the watch after its round
            signal.signal(sig, lambda *_: stop.set())
        with Live(Text("observing..."), console=output.out, auto_refresh=False) as live:
            while not stop.is_set():
                found, _ = gather_status(repo, sessions)
                live.update(styled(render_text(found)), refresh=True)
                done += 1
                if rounds and done >= rounds:
                    break
                clock_of(ctx).wait(stop, interval)


@app.command()
def serve(
    ctx: typer.Context,
    desired: DesiredOption = None,
    listen: Annotated[
        str, typer.Option("--listen", help="HOST:PORT the page is served on.")
    ] = "127.0.0.1:9480",
    interval: IntervalOption = 30.0,
    rounds: RoundsOption = 0,
) -> None:
    """Serve the dashboard page (and its JSON) read-only, refreshed every --interval seconds."""
    from fleet.errors import FleetError
    from reconciler.adapters.dashboard import Dashboard
    from reconciler.adapters.metrics import FleetMetrics
    from reconciler.adapters.metrics import serve as serve_http
    from reconciler.workflows.desired import desired_dir
    from reconciler.workflows.status import refresh

    output = output_of(ctx)
    root = desired_dir(desired)
    open_fleet(output, desired)  # a clear error before listening if desired/ is invalid
    dashboard = Dashboard(refresh=max(int(interval), 5))
    metrics = FleetMetrics()
    server = serve_http(metrics, listen, interval, dashboard)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    output.note(f"serving the dashboard on http://{listen}/ (every {interval:g} s)")
    clock, opener, done = clock_of(ctx), sessions_of(ctx), 0
    try:
        while not stop.is_set():
            try:
                refresh(root, lambda fleet: opener(fleet, warm=True), dashboard)
                metrics.heartbeat = clock.wall()
            except FleetError as err:  # the page keeps its last status; the next try may work
                output.error(str(err))
            done += 1
            if rounds and done >= rounds:
                break
            clock.wait(stop, interval)
    finally:
        server.shutdown()
        server.server_close()
