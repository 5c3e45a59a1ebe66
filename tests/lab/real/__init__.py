"""The real engines in the lab: a CPU build of vLLM and llama-server built from source,
installed once by tests/lab/install.sh (install-vllm.sh, install-llamacpp.sh) and cached
in the lab cache (FLEET_LAB_CACHE, tests/lab/cache.py), serving tiny random-weight
models the lab writes itself.

`FLEET_REAL_ENGINES=0` leaves them out: install.sh installs neither, and every test that
needs one is skipped with the reason shown in pytest's summary (`-ra`), never silently.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.lab.cache import CACHE as CACHE  # where the real engines are cached

ENV_VAR = "FLEET_REAL_ENGINES"
SKIP_MARK = "real engine"  # in every reason `require` gives; tests/conftest.py counts them


def wanted() -> bool:
    """Whether this run uses the real engines (FLEET_REAL_ENGINES is not 0)."""
    return os.environ.get(ENV_VAR, "1") != "0"


def require(installed: Path, what: str) -> None:
    """Skip the calling test (or fixture) unless the real engine `what` is wanted and
    installed at `installed`, saying which of the two it is."""
    if not wanted():
        pytest.skip(f"{SKIP_MARK} {what}: skipped, {ENV_VAR}=0")
    if not installed.exists():
        pytest.skip(
            f"{SKIP_MARK} {what}: not installed at {installed} (run bash tests/lab/install.sh)"
        )
