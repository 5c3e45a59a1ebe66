"""`fleet import`: desired/ files for a fleet that already runs (read-only on the hosts)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from reconciler.cli.app import app, output_of


@app.command(name="import")
def import_fleet(
    ctx: typer.Context,
    host: Annotated[
        list[str] | None, typer.Option("--host", help="An ssh_config Host to import (repeat).")
    ] = None,
    out: Annotated[Path, typer.Option("--out", help="Where to write desired/.")] = Path("desired"),
    gateway: Annotated[
        str | None,
        typer.Option("--gateway", help="HOST:PATH of the LiteLLM config to import aliases from."),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Write into a non-empty --out.")] = False,
) -> None:
    """Observe hosts that already run engines and write desired/ for them (read-only)."""
    from fleet.errors import FleetError
    from reconciler.workflows.importer import errors, import_hosts, write_files

    output = output_of(ctx)
    where = None
    if gateway is not None:
        name, colon, path = gateway.partition(":")
        if not colon or not name or not path.startswith("/"):
            raise FleetError(f"--gateway takes HOST:/path/to/config.yaml, not {gateway!r}")
        where = (name, path)
    with output.progress("observing the hosts"):
        result, problems = import_hosts(host or [], where)
    output.problems(problems)
    if errors(problems):
        raise FleetError("the imported desired/ does not validate; nothing written")
    for written in write_files(out, result.files, force=force):
        output.line(f"wrote {written}")
    for note in result.notes:
        output.note(f"note: {note}", style="yellow")
    if result.variables:
        output.line("set these variables where fleet runs (secrets were replaced by them):")
        output.line("  " + " ".join(result.variables))
    output.line(f"{out}: valid; `fleet plan -d {out}` should find nothing to do")
