"""The lab's cache folder on this machine: what it builds or installs once and keeps.

`FLEET_LAB_CACHE` (default /opt/fleet-lab) holds the LiteLLM venv (install.sh), the real
vLLM's venv and its run dirs, models and image rootfs (install-vllm.sh, real/vllm.py),
llama-server's build (install-llamacpp.sh, real/llamacpp.py), the systemd hosts' rootfs
(nspawn_layer.py) and the devbox's engine data root (devbox.py). Pointing it at an empty
folder runs the whole first-time path without touching the machine's own cache:

    FLEET_LAB_CACHE=$(mktemp -d) bash scripts/test.sh

A part with a setting of its own (FLEET_LAB_LITELLM_VENV, FLEET_LAB_SYSTEMD_ROOTFS) goes
where that setting says; without it, under the cache. The install scripts spell the same
defaults in shell.
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT = "/opt/fleet-lab"
CACHE = Path(os.environ.get("FLEET_LAB_CACHE") or DEFAULT)


def cached(name: str, override: str) -> Path:
    """Where a cached part lives: the environment variable `override` when set, else
    `name` under the cache."""
    return Path(os.environ.get(override) or CACHE / name)
