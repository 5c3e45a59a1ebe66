"""The layering contracts: the core imports neither the adapters nor any I/O library, and
inside each package the arrows run one way (import-linter, run on the real tree and on a
temporary copy holding one probe that breaks a contract)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LINT = Path(sys.executable).with_name("lint-imports")
CONTRACTS = 4


def lint(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(LINT), "--no-cache"], cwd=root, capture_output=True, text=True)


def test_import_contracts_hold() -> None:
    result = lint(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Contracts: {CONTRACTS} kept, 0 broken." in result.stdout


@pytest.fixture(scope="module")
def tree_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tree")
    for package in ("fleet", "reconciler"):
        shutil.copytree(
            REPO / package, root / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


@pytest.mark.parametrize(
    ("probe", "imports", "broken"),
    [
        ("fleet/_probe.py", "import subprocess", "fleet._probe -> subprocess"),
        ("fleet/_probe.py", "import reconciler.adapters.ssh", "fleet._probe -> reconciler"),
        ("fleet/observed/_probe.py", "import fleet.gateways.litellm", "fleet.observed._probe ->"),
        ("fleet/plan/_probe.py", "import fleet.report.plan_text", "fleet.plan._probe ->"),
        ("fleet/facts/_probe.py", "import fleet.spec.models", "fleet.facts._probe ->"),
        ("reconciler/workflows/_probe.py", "import reconciler.cli.app", "reconciler.workflows._p"),
    ],
    ids=[
        "io-library",
        "core-to-shell",
        "observed-to-render",
        "plan-to-report",
        "facts-to-spec",
        "workflow-to-cli",
    ],
)
def test_contract_catches_a_backward_import(
    tree_copy: Path, probe: str, imports: str, broken: str
) -> None:
    """The contracts are not vacuous: one backward import in a copy of the tree breaks one."""
    path = tree_copy / probe
    path.write_text(imports + "\n")
    try:
        result = lint(tree_copy)
    finally:
        path.unlink()
    assert result.returncode != 0
    assert f"Contracts: {CONTRACTS - 1} kept, 1 broken." in result.stdout
    assert broken in result.stdout.replace("\n", " ")
