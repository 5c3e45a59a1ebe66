"""`fleet bench`: measured speed and depth of every seat, with baselines and regressions.

Exit codes: 0 measured, 2 a regression was found (>= 30% below baseline: warning, >= 50%
critical), 1 an error. `--write` keeps the results in the fleet repository beside the
inventory (BENCH.json) and commits exactly that file and the regenerated inventory.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from reconciler.cli.app import (
    DesiredOption,
    JsonOption,
    SeatOption,
    app,
    context_of,
    open_fleet,
    output_of,
    sessions_of,
)
from reconciler.cli.output import Output

if TYPE_CHECKING:
    from fleet.observed.bench import BenchResult


@app.command()
def bench(
    ctx: typer.Context,
    desired: DesiredOption = None,
    seat: SeatOption = None,
    depth: Annotated[
        bool, typer.Option("--depth", help="Also probe a prompt of ~0.97x the context.")
    ] = False,
    via: Annotated[
        str, typer.Option("--via", help="seat (direct) or gateway (by alias, as clients see it).")
    ] = "seat",
    as_json: JsonOption = False,
    write: Annotated[
        bool, typer.Option("--write", help="Record the results in Git beside the inventory.")
    ] = False,
    set_baseline: Annotated[
        bool, typer.Option("--set-baseline", help="Make these results the seats' baselines.")
    ] = False,
    runs: Annotated[int, typer.Option("--runs", min=1, help="Measured requests per seat.")] = 3,
    max_tokens: Annotated[
        int, typer.Option("--max-tokens", min=2, help="Tokens per measured request.")
    ] = 256,
) -> None:
    """Measure warm decode, time to first token, speculative acceptance and, with --depth,
    deep prefill of each seat, one probe at a time."""
    from fleet.errors import FleetError
    from reconciler.cli.observe import observe
    from reconciler.workflows.bench import BenchOptions, bench_seats
    from reconciler.workflows.plans import record_bench

    if via not in ("seat", "gateway"):
        raise FleetError(f"--via takes seat or gateway, not {via!r}")
    output = output_of(ctx)
    repo = open_fleet(output, desired)
    names = _seats(repo.desired, seat)
    observation = observe(context_of(ctx), repo)
    options = BenchOptions(runs, max_tokens, depth, via, set_baseline)  # type: ignore[arg-type]
    with (
        sessions_of(ctx)(repo.desired) as connections,
        output.progress("measuring, one seat at a time"),
    ):
        results = bench_seats(
            repo.desired, connections, observation, names, options, repo.bench_record()
        )
    if as_json:
        output.json({"seats": [_json(r) for r in results]})
    else:
        _print(output, results)
    if write:
        with sessions_of(ctx)(repo.desired) as connections:
            said = record_bench(repo, connections, results)
        if as_json:
            output.note(said)  # stdout stays one JSON document
        else:
            output.line(said)
    raise typer.Exit(2 if any(r.regression for r in results) else 0)


def _seats(desired: object, wanted: list[str] | None) -> list[str]:
    from fleet.engines import engine_for
    from fleet.errors import FleetError
    from fleet.spec.models import DesiredFleet

    assert isinstance(desired, DesiredFleet)
    unknown = sorted(set(wanted or ()) - set(desired.seats))
    if unknown:
        raise FleetError(f"no such seat in desired/: {', '.join(unknown)}")
    chosen = sorted(wanted or desired.seats)
    seats = desired.seats
    return [n for n in chosen if wanted or engine_for(seats[n].engine).serves_chat(seats[n])]


def _json(result: BenchResult) -> dict[str, object]:
    data = result.model_dump(mode="json")
    keys = (
        "seat",
        "host",
        "spec_hash",
        "decode_tok_s",
        "ttft_s",
        "prefill",
        "speculative",
        "baseline_ratio",
        "regression",
    )
    return {k: data[k] for k in keys}


def _print(output: Output, results: list[BenchResult]) -> None:
    for r in results:
        decode = r.decode_tok_s
        line = f"{r.seat} on {r.host}: "
        line += (
            f"decode {decode.median:.1f} tok/s [{decode.min:.1f}-{decode.max:.1f}, n={decode.n}]"
            if decode
            else "no tokens"
        )
        line += f", TTFT {r.ttft_s:.3f} s" if r.ttft_s is not None else ""
        if r.speculative:
            spec = r.speculative
            line += f", acceptance {spec.acceptance_rate:.1%}"
            line += f" (mean length {spec.mean_acceptance_length:.2f})"
        output.line(line)
        if r.prefill is not None:
            style = "red" if r.prefill.result == "failed" else None
            detail = f": {r.prefill.log_line}" if r.prefill.log_line else ""
            speed = f" at {r.prefill.tok_s:,.0f} tok/s" if r.prefill.tok_s else ""
            output.line(f"  depth: {r.prefill.describe()}{speed}{detail}", style=style)
        if r.regression:
            below = 1 - (r.baseline_ratio or 0)
            output.line(
                f"  {r.regression} bench-regression {r.seat}: "
                f"decode {below:.0%} below its baseline",
                style="red" if r.regression == "critical" else "yellow",
            )
