"""Shared test configuration: where the recorded corpus lives, and the lab fixtures."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

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


# The lab modules that take longest (seconds of test time on three workers, measured with
# --junitxml): handed to the xdist workers first, so that no long module is left to run
# alone at the end while the other worker idles. A scheduling hint, nothing more.
LONGEST_FIRST = (
    "tests/integration/test_apply_lab.py",  # ~255 s
    "tests/integration/test_reconcile_lab.py",  # ~230 s
    "tests/integration/test_real_engines_lab.py",  # ~160 s (+30-100 s importing vLLM once)
    "tests/integration/test_systemd.py",  # ~225 s with the lab up, loaded (surge ~45 s)
    "tests/integration/test_kv_contract_lab.py",  # ~160-185 s: two real vLLM starts, no lab
    "tests/integration/test_observe.py",  # ~155 s
    "tests/integration/test_bench_lab.py",  # ~125 s
    "tests/integration/test_apply_guards_lab.py",  # ~125 s
    "tests/integration/test_gateway_bluegreen_lab.py",  # ~80 s before surge's cases
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest lab modules first, then every other lab test, then the rest (each in
    collection order); scripts/test.sh keeps this order (--no-loadscope-reorder)."""

    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::", 1)[0]
        if path in LONGEST_FIRST:
            return LONGEST_FIRST.index(path)
        return len(LONGEST_FIRST) + (0 if item.get_closest_marker("lab") else 1)

    items.sort(key=rank)


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
