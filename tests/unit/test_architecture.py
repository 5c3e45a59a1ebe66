"""The layering contracts: the core imports neither the adapters nor any I/O library."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_import_contracts_hold() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint), "--no-cache"], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 2 kept, 0 broken." in result.stdout


def test_contract_catches_an_io_import(tmp_path: Path) -> None:
    """The contract is not vacuous: a core module importing paramiko breaks it."""
    bad = REPO / "fleet" / "_contract_probe.py"
    bad.write_text("import subprocess\n")
    try:
        lint = Path(sys.executable).with_name("lint-imports")
        result = subprocess.run([str(lint), "--no-cache"], cwd=REPO, capture_output=True, text=True)
    finally:
        bad.unlink()
    assert result.returncode != 0
    assert "fleet._contract_probe -> subprocess" in result.stdout
