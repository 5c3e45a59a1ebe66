"""`fleet models` and `fleet models prune`: every model on every host, and freeing the
unused ones.

`fleet models` lists each model directory and GGUF file with its size, the seats that use
it, its lineage and when it was last read, then its findings: `unused-model`, and
`model-changed` for a fetched model whose files moved since fleet recorded them.
`--verify` hashes every file with a recorded digest again and exits 2 on a
`model-changed` finding (as `fleet check` does on drift; 1: a host unreachable).
`fleet models prune [--host H] [--older-than 30d] [--model PATH]` shows what it would
remove and free, asks (skipped with --auto-approve, required when not on a terminal, as
apply), and removes it (`reconciler.workflows.models`).
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Annotated

import typer

from reconciler.cli.app import DesiredOption, JsonOption, open_fleet, output_of, sessions_of

if TYPE_CHECKING:
    from fleet.observed.models import ObservedHost
    from fleet.report.models import ModelRow
    from reconciler.cli.output import Output

models_app = typer.Typer(help="List the models on every host; prune the unused ones.")

HostOption = Annotated[list[str] | None, typer.Option("--host", help="Only this host.")]


@models_app.callback(invoke_without_command=True)
def models(
    ctx: typer.Context,
    desired: DesiredOption = None,
    host: HostOption = None,
    as_json: JsonOption = False,
    verify: Annotated[
        bool, typer.Option("--verify", help="Hash every recorded file again; exit 2 on a change.")
    ] = False,
) -> None:
    """Every model directory and GGUF file on every host: size, seats, lineage, last read."""
    if ctx.invoked_subcommand is not None:
        return
    from fleet.observed.model_use import model_findings
    from fleet.report.models import model_rows
    from reconciler.workflows.observe import observe_fleet

    output = output_of(ctx)
    repo = open_fleet(output, desired)
    with sessions_of(ctx)(repo.desired, warm=True) as connections:
        observation = observe_fleet(repo.desired, connections, host or None, verify=verify)
    rows = model_rows(repo.desired, observation)
    findings = [
        {"kind": kind, "target": target, "message": message, "severity": severity}
        for kind, target, message, severity in model_findings(repo.desired, observation)
    ]
    unreachable = sorted(h.name for h in observation.hosts.values() if not h.reachable)
    if as_json:
        output.json(
            {
                "hosts": {h.name: _host_json(h) for h in observation.hosts.values()},
                "models": [row.model_dump(mode="json") for row in rows],
                "findings": findings,
            }
        )
    else:
        _print_listing(output, rows, findings, unreachable)
    if verify and (unreachable or any(f["kind"] == "model-changed" for f in findings)):
        raise typer.Exit(1 if unreachable else 2)


def _print_listing(
    output: Output, rows: list[ModelRow], findings: list[dict[str, str]], unreachable: list[str]
) -> None:
    """The rows, the model-changed findings, a summary line and the unreachable hosts."""
    from fleet.report.models import row_line

    for row in rows:
        output.line(row_line(row), style="yellow" if row.unused else None)
    for f in (f for f in findings if f["kind"] == "model-changed"):
        output.line(f"{f['kind']}: {f['target']}: {f['message']}", style="red")
    unused = [r for r in rows if r.unused]
    output.line(f"{len(rows)} model(s), {len(unused)} unused (`fleet models prune` frees them)")
    for name in unreachable:
        output.note(f"{name}: unreachable", style="red")


def _host_json(host: ObservedHost) -> dict[str, object]:
    """A host in `fleet models --json`: reachable, and the bytes free in its models root."""
    free = host.disk.available if host.disk is not None else None
    return {"reachable": host.reachable, "disk_available": free}


@models_app.command("prune")
def prune(
    ctx: typer.Context,
    desired: DesiredOption = None,
    host: HostOption = None,
    older_than: Annotated[
        str | None, typer.Option("--older-than", help="Only models last read before: 30d, 12h.")
    ] = None,
    model: Annotated[
        list[str] | None, typer.Option("--model", help="Only this model path (with --host).")
    ] = None,
    auto_approve: Annotated[bool, typer.Option("--auto-approve", help="Do not ask.")] = False,
) -> None:
    """Remove models no seat of desired/ and no container uses, inside each models root."""
    from fleet.errors import FleetError
    from fleet.report.models import parse_age, prune_candidates, row_line
    from fleet.units import human_bytes
    from reconciler.workflows import models as workflow
    from reconciler.workflows.observe import observe_fleet

    output = output_of(ctx)
    repo = open_fleet(output, desired)
    try:
        age = parse_age(older_than) if older_than is not None else None
    except ValueError as err:
        raise FleetError(str(err)) from err
    if model and len(host or []) != 1:
        raise FleetError("--model needs the one --host it is on")
    with sessions_of(ctx)(repo.desired, warm=True) as connections:
        observation = observe_fleet(repo.desired, connections, host or None)
        if model and host:
            workflow.check_named(repo.desired, observation, host[0], model)
        rows = prune_candidates(
            repo.desired, observation, now=time.time(), hosts=frozenset(host or ()), older_than=age
        )
        rows = [r for r in rows if not model or r.path in {m.rstrip("/") for m in model}]
        if not rows:
            output.line("Nothing to prune: every model is used (or newer than --older-than).")
            return
        for row in rows:
            output.line(f"  - {row_line(row)}", style="red")
        freed = sum(r.size_bytes or 0 for r in rows)
        output.line(f"Prune would remove {len(rows)} model(s), freeing {human_bytes(freed)}.")
        _confirm(len(rows), auto_approve)
        workflow.prune(repo.desired, connections, rows, output.line)
    output.line(f"Pruned {len(rows)} model(s), freed {human_bytes(freed)}.", style="green")


def _confirm(count: int, auto_approve: bool) -> None:
    from fleet.errors import FleetError

    if auto_approve:
        return
    if not sys.stdin.isatty():
        raise FleetError(
            "refusing to prune without confirmation: stdin is not a terminal; pass --auto-approve"
        )
    if not typer.confirm(f"Remove {count} model(s)?", default=False):
        raise typer.Abort()
