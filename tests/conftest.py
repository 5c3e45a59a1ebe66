"""Shared test configuration: where the recorded corpus lives, and the lab fixtures."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# The built-in runtimes and gateway kinds register their keys of a host file and of
# gateway.yaml when imported, as the command line imports them before it reads desired/.
import fleet.gateways
import fleet.runtimes  # noqa: F401
from tests import schedule
from tests.lab import real as real_engines

pytest_plugins = ["tests.lab.fixtures"]

# pytest caches the test modules it rewrites (their asserts) in __pycache__ (gitignored)
# unless bytecode writing is off, as PYTHONDONTWRITEBYTECODE turns it off on CI runners and
# here: then every worker of every run rewrites the suite's ~180 modules again, about 7 s
# of each worker's start. The cache files are written atomically, safe across workers.
sys.dont_write_bytecode = False

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests" / "corpus"


@pytest.fixture(scope="session")
def corpus() -> Path:
    """The recorded real data (tests/corpus, with SOURCES.md saying where each file came from)."""
    if not CORPUS.is_dir():
        pytest.fail(f"recorded corpus not found at {CORPUS}")
    return CORPUS


# The longest lab modules go to the xdist workers first (tests/schedule.py): their times
# are recorded by the runs themselves into tests/durations.json, never kept by hand. Only
# the process that sees every report records (under xdist, the controller, which
# collects nothing itself).
RECORDERS: list[schedule.Recorder] = []


def pytest_configure(config: pytest.Config) -> None:
    if schedule.Recorder.wanted(config):
        RECORDERS.append(schedule.Recorder())


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest lab modules first, then every other lab test, then the rest (each in
    collection order); scripts/test.sh keeps this order (--no-loadscope-reorder)."""
    schedule.order(items, schedule.recorded())


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    for recorder in RECORDERS:
        recorder.add(report)


def pytest_sessionfinish(session: pytest.Session) -> None:
    for recorder in RECORDERS:
        recorder.write()


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line at the end when the real engines' tests were skipped, so that a run
    without them (FLEET_REAL_ENGINES=0, or not installed) never passes for a full one."""
    reasons = [str(r.longrepr[-1]) for r in terminalreporter.stats.get("skipped", [])]
    real = [r.removeprefix("Skipped: ") for r in reasons if real_engines.SKIP_MARK in r]
    if real:
        terminalreporter.write_line(
            f"real engines: {len(real)} tests skipped ({'; '.join(sorted(set(real)))})",
            yellow=True,
        )
