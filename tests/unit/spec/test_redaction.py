"""Secret values from the environment never reach fleet's output."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

DESIRED = Path(__file__).resolve().parents[3] / "desired"


def test_referenced_secret_values_are_redacted(tmp_path: Path) -> None:
    secret = "correct-horse-battery-staple-42"
    current = tmp_path / "config.yaml"
    current.write_text(
        "general_settings:\n  master_key: " + secret + "\nmodel_list:\n"
        "  - model_name: x\n    litellm_params: {model: openai/x}\n"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "reconciler",
            "render",
            "gateway",
            "--current",
            str(current),
            "--desired",
            str(DESIRED),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "LITELLM_MASTER_KEY": secret},
    )
    assert result.returncode == 0, result.stderr
    assert secret not in result.stdout
    assert "master_key: ***" in result.stdout
