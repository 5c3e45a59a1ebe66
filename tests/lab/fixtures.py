"""pytest plugin of the lab (tests/conftest.py: `pytest_plugins = ["tests.lab.fixtures"]`).

`lab`: one Lab for the whole session, brought up once (after cleaning whatever a crashed
run left) and taken down at the end, also when tests fail. Another test session on the
same lab directory waits for its turn. Integration tests carry the marker `lab`
(registered in pyproject.toml).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .lab import Lab


@pytest.fixture(scope="session")
def lab() -> Iterator[Lab]:
    """The running lab: tower, rig and gateway (see tests/lab/README.md)."""
    the_lab = Lab()
    with the_lab.locked():
        the_lab.up()
        try:
            yield the_lab
        finally:
            the_lab.down()
