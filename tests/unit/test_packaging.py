"""The distribution has a name of its own and one version, ships its type hints, and the
example workflows install this project pinned, never a bare name that could resolve to
someone else's package.

The version is written once, as `fleet.__version__`: pyproject.toml reads it (a dynamic
version), `fleet version` prints it, and every pinned install in examples/ and deploy/
names it, so a release that bumps it and forgets one of them fails here.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
import warnings
from importlib import metadata
from pathlib import Path

import pytest
import yaml  # type: ignore[import-untyped]

import fleet

REPO = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((REPO / "examples" / "github-workflows").glob("fleet-*.yml"))
PINNED = re.compile(r'pip install "\$\{FLEET_PACKAGE:-fleet-reconciler==\d+\.\d+\.\d+\}"')
PIN = re.compile(r"fleet-reconciler==([0-9][0-9A-Za-z.]*)")


def test_distribution_name_is_not_the_unrelated_fleet_package() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["name"] == "fleet-reconciler"
    assert project["scripts"] == {"fleet": "reconciler.cli:main"}


def test_the_example_workflows_are_apart_from_the_projects_own_ci() -> None:
    assert [w.name for w in WORKFLOWS] == [
        "fleet-apply.yml",
        "fleet-bench.yml",
        "fleet-drift.yml",
        "fleet-plan.yml",
    ]
    own = sorted(p.name for p in (REPO / ".github" / "workflows").iterdir())
    assert own == ["ci.yml"], "GitHub runs every file there, in this repository too"


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
        if path.parent.name == "shipped":  # run by another program's Python (LiteLLM's)
            continue
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


def setuptools_config() -> dict[str, object]:
    """pyproject.toml as setuptools resolves it (its dynamic version read), no build."""
    from setuptools.config.pyprojecttoml import read_configuration

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # older setuptools call [tool.setuptools] beta
        return read_configuration(REPO / "pyproject.toml")


def test_the_version_is_written_once_and_read_by_the_build() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert "version" not in project and project["dynamic"] == ["version"]
    assert setuptools_config()["project"]["version"] == fleet.__version__  # type: ignore[index]


def test_fleet_version_prints_it() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "reconciler", "version"], capture_output=True, text=True, timeout=60
    )
    assert (result.returncode, result.stdout) == (0, f"fleet {fleet.__version__}\n")


PINNING = sorted([*WORKFLOWS, *(REPO / "deploy").rglob("*.y*ml")])


@pytest.mark.parametrize("path", PINNING, ids=[p.name for p in PINNING])
def test_every_pinned_install_names_this_version(path: Path) -> None:
    assert set(PIN.findall(path.read_text())) <= {fleet.__version__}


def test_pins_are_found_where_they_are_written() -> None:
    pinned = {p.name for p in PINNING if PIN.search(p.read_text())}
    assert pinned == {w.name for w in WORKFLOWS} | {"fleet-reconcile.yaml"}


@pytest.mark.parametrize("package", ["fleet", "reconciler"])
def test_both_packages_ship_their_type_hints(package: str) -> None:
    """PEP 561: a `py.typed` marker in the package, installed as package data."""
    assert (REPO / package / "py.typed").is_file()
    package_data = setuptools_config()["tool"]["setuptools"]["package-data"]  # type: ignore[index]
    assert "py.typed" in package_data[package]


CI = REPO / ".github" / "workflows" / "ci.yml"


def ci_lines(job: str) -> list[str]:
    """The shell lines the steps of one job of this project's CI run."""
    jobs = yaml.safe_load(CI.read_text())["jobs"]
    return [
        line.strip() for step in jobs[job]["steps"] for line in step.get("run", "").splitlines()
    ]


def test_ci_runs_lint_unit_and_lab_as_separate_jobs() -> None:
    jobs = yaml.safe_load(CI.read_text())["jobs"]
    assert list(jobs) == ["lint", "unit", "lab"]
    assert {name: job["container"]["image"] for name, job in jobs.items()} == dict.fromkeys(
        jobs, "debian:12"
    )
    assert jobs["lab"]["container"]["options"] == "--privileged", "the lab runs dockerd"


def test_ci_jobs_run_what_scripts_test_sh_runs() -> None:
    script = (REPO / "scripts" / "test.sh").read_text()
    lines = {line.strip() for line in script.splitlines()}
    lint = [line for line in ci_lines("lint") if line.startswith(".venv/bin/")]
    assert lint and set(lint) <= lines, "ruff and mypy exactly as test.sh calls them"
    workers = re.search(r"workers=\$\{FLEET_TEST_WORKERS:-(\d+)\}", script)
    assert workers is not None
    pytest_line = next(line for line in lines if line.startswith('.venv/bin/pytest -n "$workers"'))
    for job, target in (("unit", "tests/unit"), ("lab", "tests/integration")):
        expected = pytest_line.replace('"$workers"', workers.group(1)).replace('"$@"', target)
        assert expected in ci_lines(job), job


def test_the_ci_test_jobs_cover_every_test_file() -> None:
    files = [p.relative_to(REPO).as_posix() for p in (REPO / "tests").rglob("test_*.py")]
    outside = [f for f in files if not f.startswith(("tests/unit/", "tests/integration/"))]
    assert files and outside == []
