"""What a command imports, as `python -X importtime` lists it: each command pays for the
libraries its work needs and no others (start-up is most of an offline command's time)."""

from __future__ import annotations

import gc
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import reconciler.cli

EXAMPLE = Path(__file__).resolve().parents[3] / "desired"
# an imported module's line ends in its dotted name: "import time: 123 | 456 |   a.b"
IMPORT_LINE = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|\s+([\w.]+)$", re.MULTILINE)


def unreachable_fleet(root: Path) -> Path:
    """One host whose sshd port refuses at once: observation runs to its report."""
    desired = root / "desired"
    (desired / "hosts").mkdir(parents=True)
    (desired / "fleet.yaml").write_text("name: probe\n")
    (desired / "hosts" / "solo.yaml").write_text(
        "ssh: {address: 127.0.0.1, port: 9}\naddress: 127.0.0.1\n"
    )
    return desired


def imported_by(args: list[str]) -> set[str]:
    env = {k: v for k, v in os.environ.items() if k != "FLEET_SSH_CONFIG"}
    run = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "reconciler", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert "Traceback" not in run.stderr, run.stderr[-2000:]
    return set(IMPORT_LINE.findall(run.stderr))


@pytest.mark.parametrize(
    ("command", "needed", "not_needed"),
    [
        (
            ["validate"],
            {"pydantic", "yaml", "fleet.spec.load"},
            {
                "ruamel",
                "paramiko",
                "deepdiff",
                "git",
                "docker",
                "rich",
                "numpy",
                "fleet.observed.models",
                "fleet.observed.gateway_config",
                "fleet.gateways.litellm.config",
                "fleet.gateways.litellm.imported",
            },
        ),
        (
            ["inventory", "--json"],
            {"paramiko", "fleet.report.inventory"},
            {"ruamel", "deepdiff", "git", "docker", "numpy", "asyncio", "unittest.mock"},
        ),
    ],
    ids=["validate", "inventory"],
)
def test_a_command_imports_what_its_work_needs(
    tmp_path: Path, command: list[str], needed: set[str], not_needed: set[str]
) -> None:
    desired = EXAMPLE if command == ["validate"] else unreachable_fleet(tmp_path)
    modules = imported_by([*command, "--desired", str(desired)])
    assert needed <= modules
    leaked = {m for m in modules if m in not_needed or m.split(".")[0] in not_needed}
    assert leaked == set()


@pytest.fixture
def collector() -> Iterator[list[bool]]:
    """Whether the cycle collector ran during each command `main` ran (the collector and
    its generations as they were, after)."""
    seen: list[bool] = []
    yield seen
    gc.unfreeze()
    gc.enable()


@pytest.mark.parametrize(
    ("argv", "collecting"),
    [
        (["validate"], False),
        (["explain", "log", "x.log"], False),
        (["plan"], True),
        (["reconcile"], True),
        (["--help"], True),
    ],
    ids=["validate", "explain", "plan", "reconcile", "help"],
)
def test_only_offline_commands_run_without_the_cycle_collector(
    monkeypatch: pytest.MonkeyPatch, collector: list[bool], argv: list[str], collecting: bool
) -> None:
    def command(args: list[str], context: object) -> int:
        collector.append(gc.isenabled())
        return 0

    monkeypatch.setattr(reconciler.cli, "run", command)
    monkeypatch.setattr(sys, "argv", ["fleet", *argv])
    with pytest.raises(SystemExit) as done:
        reconciler.cli.main()
    assert done.value.code == 0
    assert collector == [collecting]
