"""Every offline script of bench/ runs at its smallest size, so that none rots unnoticed.

The figures are not checked (they are a machine's), only that each script finishes and
prints its table. The benches that need the lab (apply, downtime, observe) run at their
smallest size on the session's lab in `tests/integration/test_bench_lab.py`.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from bench import kv_estimate_report, scale_bench

REPO = Path(__file__).resolve().parents[2]


def run_scale(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(sys, "argv", ["scale_bench", "--seats", "2"])
    scale_bench.main()
    return capsys.readouterr().out


def run_kv_report(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    assert kv_estimate_report.main([]) == 0
    return capsys.readouterr().out


def run_startup(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    # a fresh interpreter per command, as a user runs them: one round of each
    argv = [sys.executable, "-m", "bench.startup_bench", "--runs", "1"]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


Run = Callable[[pytest.CaptureFixture[str], pytest.MonkeyPatch], str]


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        (run_scale, ["     2 make_plan", "     2 render_markdown"]),
        (run_kv_report, ["Logs no pair covers:", "Estimate against the logged figures"]),
        (run_startup, ["floor: one pydantic model", "fleet validate", "fleet explain model"]),
    ],
    ids=["scale_bench", "kv_estimate_report", "startup_bench"],
)
def test_bench_script_runs_at_its_smallest_size(
    run: Run,
    expected: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = run(capsys, monkeypatch)
    for line in expected:
        assert line in out, out


def test_every_bench_script_has_a_smoke_run() -> None:
    """A new script in bench/ gets its row here or in the lab's bench module."""
    offline = {"scale_bench", "kv_estimate_report", "startup_bench", "synthetic_fleet"}
    in_the_lab = {"apply_bench", "downtime_bench", "observe_bench"}
    scripts = {p.stem for p in (REPO / "bench").glob("*.py") if p.stem != "__init__"}
    assert scripts == offline | in_the_lab
