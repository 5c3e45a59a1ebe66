"""`fleet validate` as a user runs it: exit codes, one line per problem, JSON, no traceback."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DESIRED = Path(__file__).resolve().parents[3] / "desired"
LLAMACPP = DESIRED.parent / "examples" / "llamacpp-fleet" / "desired"


def run_fleet(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reconciler", *args], capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    root = tmp_path / "desired"
    shutil.copytree(DESIRED, root)
    sec = root / "seats" / "sec.yaml"
    sec.write_text(sec.read_text().replace("kv_cache_bytes:", "kv_cache_byte:"))
    coder = root / "seats" / "coder.yaml"
    coder.write_text(coder.read_text().replace(":v0.18.0", ":latest"))
    return root


@pytest.mark.parametrize(
    ("desired", "counted"),
    [
        (DESIRED, "valid (3 hosts, 9 seats"),
        (LLAMACPP, "valid (4 hosts, 3 seats, 0 warnings)"),
    ],
    ids=["compose-fleet", "llamacpp-systemd-fleet"],
)
def test_example_is_valid(desired: Path, counted: str) -> None:
    result = run_fleet("validate", "--desired", str(desired))
    assert result.returncode == 0, result.stderr
    assert counted in result.stdout


def test_schema_errors_exit_1_one_line_each(broken: Path) -> None:
    result = run_fleet("validate", "--desired", str(broken))
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0] == (
        f"{broken}/seats/sec.yaml:9: error: unknown key 'kv_cache_byte' "
        "(did you mean 'kv_cache_bytes'?)"
    )


def test_rule_errors_after_schema_is_fixed(broken: Path) -> None:
    sec = broken / "seats" / "sec.yaml"
    sec.write_text(sec.read_text().replace("kv_cache_byte:", "kv_cache_bytes:"))
    result = run_fleet("validate", "--desired", str(broken))
    assert result.returncode == 1
    assert result.stderr.strip() == (
        f"{broken}/seats/coder.yaml:5: error: image tag 'latest' "
        "floats: pin a version (and ideally a digest)"
    )
    assert "Traceback" not in result.stderr


def test_json_lists_problems(broken: Path) -> None:
    result = run_fleet("validate", "--desired", str(broken), "--json")
    assert result.returncode == 1
    problems = json.loads(result.stdout)
    assert [(Path(p["path"]).name, p["line"], p["severity"]) for p in problems] == [
        ("sec.yaml", 9, "error")
    ]


def test_missing_directory_is_one_clear_line(tmp_path: Path) -> None:
    result = run_fleet("validate", "--desired", str(tmp_path / "nope"))
    assert result.returncode == 1
    assert result.stderr.strip() == f"error: desired/ directory not found: {tmp_path / 'nope'}"


def test_schema_describes_fields() -> None:
    result = run_fleet("schema", "seat")
    assert result.returncode == 0
    schema = json.loads(result.stdout)
    assert schema["additionalProperties"] is False
    assert "KV-cache budget" in schema["properties"]["kv_cache_bytes"]["description"]
