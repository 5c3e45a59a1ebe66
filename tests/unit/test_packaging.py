"""The distribution has a name of its own, and the example workflows install this project
pinned, never a bare name that could resolve to someone else's package."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("fleet-*.yml"))
PINNED = re.compile(r'pip install "\$\{FLEET_PACKAGE:-fleet-reconciler==\d+\.\d+\.\d+\}"')


def test_distribution_name_is_not_the_unrelated_fleet_package() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["name"] == "fleet-reconciler"
    assert project["scripts"] == {"fleet": "reconciler.cli:main"}


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=[w.stem for w in WORKFLOWS])
def test_workflows_install_a_pinned_release(workflow: Path) -> None:
    installs = [line.strip() for line in workflow.read_text().splitlines() if "pip install" in line]
    assert installs, f"{workflow.name} installs nothing"
    assert all(PINNED.search(line) for line in installs), installs
