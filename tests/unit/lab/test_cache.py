"""The lab cache is one setting: FLEET_LAB_CACHE moves every cached part of the lab (the
LiteLLM venv, the systemd hosts' rootfs, the real engines, the devbox's engine data),
and a part's own setting still wins for that part."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
WHERE = """
import json
from tests.lab import gateway, nspawn_layer
from tests.lab.real import CACHE, llamacpp, vllm
print(json.dumps({
    "litellm": str(gateway.LITELLM_VENV), "rootfs": str(nspawn_layer.ROOTFS),
    "vllm": str(vllm.VENV), "llama-server": str(llamacpp.HOME), "devbox": str(CACHE),
}))
"""


def places(**env: str) -> dict[str, str]:
    """Where each part lives with these settings (a fresh interpreter reads them)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("FLEET_LAB_")}
    out = subprocess.run(
        [sys.executable, "-c", WHERE],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**clean, **env},
        timeout=60,
        check=True,
    ).stdout
    return dict(json.loads(out))


def under(root: str, litellm: str = "", rootfs: str = "") -> dict[str, str]:
    """Every part under `root`, but for those given a place of their own."""
    return {
        "litellm": litellm or f"{root}/litellm-venv",
        "rootfs": rootfs or f"{root}/systemd-rootfs",
        "vllm": f"{root}/vllm-venv",
        "llama-server": f"{root}/llama-server-b11434",
        "devbox": root,
    }


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, under("/opt/fleet-lab")),
        ({"FLEET_LAB_CACHE": "/tmp/fresh"}, under("/tmp/fresh")),
        (
            {
                "FLEET_LAB_CACHE": "/tmp/fresh",
                "FLEET_LAB_LITELLM_VENV": "/srv/litellm",
                "FLEET_LAB_SYSTEMD_ROOTFS": "/srv/rootfs",
            },
            under("/tmp/fresh", litellm="/srv/litellm", rootfs="/srv/rootfs"),
        ),
    ],
    ids=["default", "cache-moved", "own-settings-win"],
)
def test_every_cached_part_follows_the_lab_cache(
    env: dict[str, str], expected: dict[str, str]
) -> None:
    assert places(**env) == expected
