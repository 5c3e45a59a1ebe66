"""Fixtures of the integration tests: the lab reset to its initial state, and a repo."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.helpers import FleetRepo, make_repo
from tests.lab.lab import Lab


@pytest.fixture
def clean_lab(lab: Lab) -> Iterator[Lab]:
    """The session's lab, back to the state right after `up`."""
    lab.reset()
    yield lab


@pytest.fixture
def repo(clean_lab: Lab, tmp_path: Path) -> FleetRepo:
    """A fleet repository (small example fleet) against a clean lab."""
    return make_repo(tmp_path, clean_lab)


@pytest.fixture
def one(clean_lab: Lab, tmp_path: Path) -> FleetRepo:
    """A fleet of one seat (flash: MoE, NVFP4, MTP) on tower."""
    return make_repo(tmp_path, clean_lab, seats=("flash",))
