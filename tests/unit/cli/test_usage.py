"""Usage mistakes and help, as a user meets them: one line, exit 1, no crash report."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest


def run_fleet(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reconciler", *args], capture_output=True, text=True, timeout=60
    )


def crash_reports() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob("fleet-crash-*.txt"))


@pytest.mark.parametrize(
    ("args", "usage", "message"),
    [
        (["nosuch"], "Usage: fleet [OPTIONS] COMMAND [ARGS]...", "No such command 'nosuch'."),
        (["plan", "--nosuchflag"], "Usage: fleet plan [OPTIONS]", "No such option: --nosuchflag"),
        (["schema", "a", "b"], "Usage: fleet schema [OPTIONS] [kind]", "Got unexpected extra"),
    ],
    ids=["unknown-command", "unknown-option", "extra-argument"],
)
def test_a_usage_mistake_is_one_message_and_exit_1(
    args: list[str], usage: str, message: str
) -> None:
    before = crash_reports()
    result = run_fleet(*args)
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0] == usage
    errors = [line for line in lines if line.startswith("error: ")]
    assert errors and errors[0].startswith(f"error: {message}")
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    assert crash_reports() == before


@pytest.mark.parametrize("args", [["--help"], ["plan", "--help"]], ids=["app", "plan"])
def test_help_renders_flags_without_type_noise(args: list[str]) -> None:
    result = run_fleet(*args)
    assert result.returncode == 0
    assert "--help" in result.stdout and "<bool>" not in result.stdout


def help_text(command: Any, args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    command.main(args, standalone_mode=False, prog_name="fleet")
    return capsys.readouterr().out


def everything() -> Any:
    from reconciler.cli import command_for

    return command_for(["--help"])


@pytest.mark.parametrize(
    "args",
    [["validate"], ["plan"], ["apply"], ["import"], ["explain"], ["explain", "model"]],
    ids=["validate", "plan", "apply", "import-named", "group", "group-command"],
)
def test_a_run_that_builds_one_command_reads_as_the_whole_app(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from reconciler.cli import command_for

    narrow = command_for(args)
    assert list(narrow.commands) == [args[0]]
    whole = help_text(everything(), [*args, "--help"], capsys)
    assert "Usage: fleet " + " ".join(args) in whole
    assert help_text(narrow, [*args, "--help"], capsys) == whole


def test_every_command_has_a_name_that_builds_it_alone() -> None:
    from reconciler.cli import command_for

    names = list(everything().commands)
    assert {"validate", "plan", "apply", "import", "explain", "reconcile"} <= set(names)
    assert all(list(command_for([name]).commands) == [name] for name in names)
