"""The distribution has a name of its own, and the example workflows install this project
pinned, never a bare name that could resolve to someone else's package."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib import metadata
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


def imported_packages(root: Path) -> dict[str, str]:
    """Top-level third-party modules the product's code imports -> one file importing it."""
    first_party = {"fleet", "reconciler"}
    found: dict[str, str] = {}
    for path in sorted([*(root / "fleet").rglob("*.py"), *(root / "reconciler").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in first_party:
                    found.setdefault(top, path.relative_to(root).as_posix())
    return found


# pydantic-core is pydantic's own compiled half, which pydantic pins to the exact version
BUNDLED = {"pydantic-core": "pydantic"}


def requirement_name(spec: str) -> str:
    return re.split(r"[<>=!~;\[ ]", spec, maxsplit=1)[0].lower().replace("_", "-")


def test_every_package_the_product_imports_is_a_runtime_dependency() -> None:
    """`pip install fleet-reconciler` alone must give every module fleet imports (a dev-only
    package that happens to be installed here, such as click, would crash a real install)."""
    declared = {
        requirement_name(spec)
        for spec in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    }
    distributions = metadata.packages_distributions()
    missing = {
        module: where
        for module, where in imported_packages(REPO).items()
        if not {
            BUNDLED.get(name, name)
            for name in (requirement_name(d) for d in distributions.get(module, [module]))
        }
        & declared
    }
    assert missing == {}, f"imported but not in [project] dependencies: {missing}"
