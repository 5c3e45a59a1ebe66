"""`fleet fit SEAT`: the KV budget that puts a seat where its concurrency band wants it.

Read-only on the hosts: it observes the seat's host once (its model's config.json, the
startup logs of seats that ran the model, nvidia-smi and the other seats on its GPUs) and
prints the `kv_cache_bytes` that gives the asked concurrency (vLLM's `Maximum concurrency`
at the seat's context, what the band judges; default: the middle of the band), the
budgets that stay in the band, the equivalent `gpu_memory_utilization`, and what each GPU
has left beside its other seats. `--write` sets the value in the seat's file in desired/,
changing that one value only. Exit 1 when no budget fits.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from reconciler.cli.app import DesiredOption, JsonOption, app, open_fleet, output_of, sessions_of

if TYPE_CHECKING:
    from fleet.plan.fit import Fit


def fit_lines(fit: Fit) -> list[str]:
    """What `fleet fit` prints for people."""
    from fleet.plan.predict import size_text

    band = f"{fit.band.min:g}x..{fit.band.max:g}x"
    gpus = ", ".join(str(g.gpu) for g in fit.gpus) or "?"
    lines = [f"{fit.seat} on {fit.host} GPU {gpus}: context {fit.context:,}, band {band}"]
    budgets = fit.budgets
    if budgets is not None:
        low, high = fit.utilization_range
        lines.append(
            f"  in the band: kv_cache_bytes {size_text(budgets.low)} .. {size_text(budgets.high)}"
            + (
                f" (gpu_memory_utilization {low:.3f} .. {high:.3f})"
                if low and high and low <= 1
                else ""
            )
        )
    if fit.chosen is not None:
        tokens = f" -> ~{fit.kv_tokens:,} tokens" if fit.kv_tokens else ""
        if fit.max_concurrency is not None:
            tokens += f", max concurrency {fit.max_concurrency:.2f}x at {fit.context:,}"
        target = f" (asked {budgets.target_concurrency:.2f}x)" if budgets else ""
        lines.append(f"  kv_cache_bytes: {fit.value}{tokens}{target}, {fit.source}")
        if fit.utilization is not None:
            lines.append(f"  as gpu_memory_utilization: {fit.utilization:.3f}")
    for room in fit.gpus:
        held = ", ".join(f"{who} {mib:,} MiB" for who, mib in room.others) or "nothing else"
        left = room.headroom_mib
        lines.append(
            f"  GPU {room.gpu} ({room.total_mib:,} MiB): {held}"
            + (f"; this seat ~{room.seat_mib:,} MiB; {left:,} MiB left" if left is not None else "")
        )
    return lines + [f"  ? {note}" for note in fit.unknown]


def seat_file(desired_root: Path, seat: str) -> Path:
    """desired/seats/<seat>.yaml (or .yml)."""
    for suffix in (".yaml", ".yml"):
        path = desired_root / "seats" / f"{seat}{suffix}"
        if path.is_file():
            return path
    return desired_root / "seats" / f"{seat}.yaml"


@app.command()
def fit(
    ctx: typer.Context,
    seat: Annotated[str, typer.Argument(help="The seat to size.")],
    concurrency: Annotated[
        float | None,
        typer.Option(
            "--concurrency",
            help="vLLM's Maximum concurrency to aim for (default: the middle of the band).",
        ),
    ] = None,
    write: Annotated[
        bool, typer.Option("--write", help="Set kv_cache_bytes in the seat's file.")
    ] = False,
    desired: DesiredOption = None,
    as_json: JsonOption = False,
) -> None:
    """Size a seat's KV budget for its context and GPUs (read-only on the hosts)."""
    from fleet.errors import PlanError
    from fleet.plan.fit import fit_seat, set_kv_budget
    from reconciler.workflows.observe import observe_fleet

    output = output_of(ctx)
    repo = open_fleet(output, desired)
    if seat not in repo.desired.seats:
        raise PlanError(f"no such seat in desired/: {seat}")
    host = repo.desired.seats[seat].host
    with sessions_of(ctx)(repo.desired) as connections, output.progress(f"observing {host}"):
        observation = observe_fleet(repo.desired, connections, hosts=[host])
    result = fit_seat(repo.desired, observation, seat, concurrency)
    if as_json:
        output.json(result.model_dump(mode="json"))
    else:
        for line in fit_lines(result):
            output.line(line)
    if result.chosen is None:
        raise PlanError(f"no KV budget fits {seat}: {result.reason}")
    if write:
        path = seat_file(repo.root, seat)
        path.write_text(set_kv_budget(path.read_text(), result.value))
        output.note(f"wrote kv_cache_bytes: {result.value} to {path}")
