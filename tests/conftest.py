"""Shared test configuration: where the recorded corpus lives, and the lab fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ["tests.lab.fixtures"]

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus"


@pytest.fixture(scope="session")
def corpus() -> Path:
    """The recorded real data (../shared/corpus beside the repository)."""
    if not CORPUS.is_dir():
        pytest.fail(f"recorded corpus not found at {CORPUS}: shared/ must sit beside the repo")
    return CORPUS
