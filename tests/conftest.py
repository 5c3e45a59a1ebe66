"""Shared test configuration: where the recorded corpus lives, and the lab fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["tests.lab.fixtures"]

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO / "tests" / "corpus"


@pytest.fixture(scope="session")
def corpus() -> Path:
    """The recorded real data (tests/corpus, with SOURCES.md saying where each file came from)."""
    if not CORPUS.is_dir():
        pytest.fail(f"recorded corpus not found at {CORPUS}")
    return CORPUS
