"""`fleet fit`: the budget for a concurrency, the band's budgets, what fits, `--write`."""

from __future__ import annotations

import shutil
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from fleet.errors import PlanError
from fleet.observed.models import Observation
from fleet.plan.fit import fit_seat, set_kv_budget
from reconciler.cli import fit as cli_fit
from tests.unit.plan.fakes import in_sync
from tests.unit.plan.models import engines_as_logged, with_models
from tests.unit.plan.test_predict import first_plan
from tests.unit.render.test_compose import DESIRED, example

MIB, GIB = 2**20, 2**30

# (seat, asked concurrency, chosen kv_cache_bytes, tokens, band's budgets, utilization)
FITS = [
    # flash (49 layers, 100,352 B a token): 1.85x of 65,536 is 121,242 tokens, 7,578 blocks
    ("flash-middle", "flash", None, 11604 * MIB, 121_248, (7_528, 15_682), 0.305),
    ("flash-asked", "flash", 1.3, 8154 * MIB, 85_200, (7_528, 15_682), 0.269),
    # coder: a tiny model; the band's low end is what one 2,048-token request needs
    ("coder", "coder", None, 1435 * MIB, 66_784, (53, 2_816), 0.03),
]


@pytest.mark.parametrize(
    ("seat", "concurrency", "chosen", "tokens", "band", "fraction"),
    [f[1:] for f in FITS],
    ids=[f[0] for f in FITS],
)
def test_fit_finds_the_budget_for_a_concurrency(
    seat: str,
    concurrency: float | None,
    chosen: int,
    tokens: int,
    band: tuple[int, int],
    fraction: float,
) -> None:
    fit = fit_seat(example(), first_plan(), seat, concurrency)
    assert fit.budgets is not None
    assert (fit.chosen, fit.kv_tokens, fit.utilization) == (chosen, tokens, fraction)
    assert (round(fit.budgets.low / MIB), round(fit.budgets.high / MIB)) == band
    assert fit.value == f"{chosen // MIB}MiB"
    assert all(room.headroom_mib is not None and room.headroom_mib >= 0 for room in fit.gpus)


def test_fit_takes_the_largest_budget_that_fits_beside_the_other_seats() -> None:
    """llama8b on a 24 GiB card: the middle of the band needs more than its GPU has left."""
    observed = first_plan()
    fit = fit_seat(example(), observed, "llama8b", 2.4)
    assert fit.budgets is not None and fit.chosen is not None
    assert fit.chosen < fit.budgets.target and fit.chosen >= fit.budgets.low
    (room,) = fit.gpus
    assert room.headroom_mib is not None and 0 <= room.headroom_mib < 1


# sec held to 2.5x..3.5x: 2.5 requests of 262,144 tokens need 850 blocks of 53.1 MiB
SEC_BAND = ("context: 262144", "context: 262144\nconcurrency_band: {min: 2.5, max: 3.5}")


def test_a_hybrid_seat_is_sized_by_the_engines_maximum_concurrency() -> None:
    """sec (Qwen3.5-27B, MTP k=3) at 262,144: the band's middle is 1.85 requests of 340
    blocks (328 of the context, 3 state groups of 1 + 3 speculative blocks), not 1.85 x
    262,144 KV tokens, which would need 81.7 GiB."""
    fit = fit_seat(example(), first_plan(), "sec")
    assert fit.budgets is not None and fit.chosen is not None
    assert fit.max_concurrency == 1.85
    assert fit.chosen == 629 * 800 * 4096 * 17 // MIB * MIB + MIB  # ceil(1.85 x 340) blocks
    assert fit.kv_tokens is not None and fit.kv_tokens / fit.context < 0.5


def test_no_budget_fits_when_the_band_needs_more_than_the_gpu_has() -> None:
    fit = fit_seat(example({"seats/sec.yaml": SEC_BAND}), first_plan(), "sec")
    assert fit.chosen is None
    assert fit.reason == (
        "the band needs at least 44.1GiB of KV but the seats beside it leave 42.6GiB on "
        "tower GPU 0 beside its weights"
    )
    with pytest.raises(PlanError, match="no KV budget fits sec"):
        fit.value  # noqa: B018


SEAT_FILES = [
    (
        "kv-line-keeps-its-comment",
        "kv_cache_bytes: 10GiB   # see below\n",
        "kv_cache_bytes: 8GiB   # see below\n",
    ),
    ("quoted", "kv_cache_bytes: '10GiB'\n", "kv_cache_bytes: 8GiB\n"),
    (
        "crlf",
        "a: 1\r\nkv_cache_bytes: 10GiB\r\nb: 2\r\n",
        "a: 1\r\nkv_cache_bytes: 8GiB\r\nb: 2\r\n",
    ),
    ("last-line-unterminated", "a: 1\nkv_cache_bytes: 10GiB", "a: 1\nkv_cache_bytes: 8GiB"),
    (
        "utilization-becomes-a-budget",
        "gpu_memory_utilization: 0.8 # cap\n",
        "kv_cache_bytes: 8GiB # cap\n",
    ),
]


@pytest.mark.parametrize(
    ("text", "edited"), [s[1:] for s in SEAT_FILES], ids=[s[0] for s in SEAT_FILES]
)
def test_the_budget_line_is_the_only_change(text: str, edited: str) -> None:
    assert set_kv_budget(text, "8GiB") == edited


def test_an_indented_or_missing_budget_is_not_guessed_at() -> None:
    with pytest.raises(PlanError, match="exactly one top-level kv_cache_bytes"):
        set_kv_budget("speculative:\n  kv_cache_bytes: 1GiB\n", "8GiB")


def test_write_changes_only_that_value_byte_for_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    desired = tmp_path / "desired"
    shutil.copytree(DESIRED, desired)
    before = {p: p.read_bytes() for p in desired.rglob("*.yaml")}
    observed = engines_as_logged(with_models(in_sync(example()), parsed=True), {"flash": 17.0})
    _observe_with(monkeypatch, observed)
    app = typer.Typer()
    app.command()(cli_fit.fit)
    app.command("version")(lambda: None)
    result = CliRunner().invoke(app, ["fit", "flash", "--write", "--desired", str(desired)])
    assert result.exit_code == 0, result.output
    assert (
        "kv_cache_bytes: 11604MiB -> ~121,248 tokens, max concurrency 1.85x at 65,536"
        in result.output
    )
    flash = desired / "seats" / "flash.yaml"
    old, new = before[flash].split(b"\n"), flash.read_bytes().split(b"\n")
    assert [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b] == [9]
    assert (old[9], new[9]) == (b"kv_cache_bytes: 10GiB", b"kv_cache_bytes: 11604MiB")
    assert {p: p.read_bytes() for p in before if p != flash} == {
        p: b for p, b in before.items() if p != flash
    }


def test_fit_exits_1_with_the_reason_when_nothing_fits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    desired = tmp_path / "desired"
    shutil.copytree(DESIRED, desired)
    sec = desired / "seats" / "sec.yaml"
    sec.write_text(sec.read_text().replace(*SEC_BAND))
    before = sec.read_bytes()
    _observe_with(monkeypatch, first_plan())
    app = typer.Typer()
    app.command()(cli_fit.fit)
    app.command("version")(lambda: None)
    result = CliRunner().invoke(app, ["fit", "sec", "--write", "--desired", str(desired)])
    assert result.exit_code == 1
    assert isinstance(result.exception, PlanError)
    assert str(result.exception).startswith("no KV budget fits sec: the band needs at least")
    assert sec.read_bytes() == before


class _NoConnections(AbstractContextManager["_NoConnections"]):
    def __init__(self, *args: Any) -> None:
        pass

    def __exit__(self, *args: Any) -> None:
        return None


def _observe_with(monkeypatch: pytest.MonkeyPatch, observed: Observation) -> None:
    """fit observes through these two; an in-memory observation stands in for the hosts."""
    monkeypatch.setattr("reconciler.adapters.connections.Connections", _NoConnections)
    monkeypatch.setattr(
        "reconciler.workflows.observe.observe_fleet", lambda desired, conns, hosts=None: observed
    )
