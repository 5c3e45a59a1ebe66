"""Usage mistakes and help, as a user meets them: one line, exit 1, no crash report."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

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
