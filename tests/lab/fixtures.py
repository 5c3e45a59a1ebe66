"""pytest plugin of the lab (tests/conftest.py: `pytest_plugins = ["tests.lab.fixtures"]`).

`lab`: one Lab for the whole session, brought up once (after cleaning whatever a crashed
run left) and taken down at the end, also when tests fail. Another test session on the
same lab directory waits for its turn. Integration tests carry the marker `lab`
(registered in pyproject.toml).

Under pytest-xdist (`scripts/test.sh` runs the suite on several workers) each worker is
its own session with its own lab: the directory `<lab dir>-<worker>` (`.lab-gw0`,
`.lab-gw1`, ...), which takes its own slot, so the workers' labs run side by side and
never touch each other, nor the demo's `.lab`.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from . import devbox as devbox_host
from . import nspawn, store
from .lab import REPO, Lab


def session_lab_dir() -> Path | None:
    """This session's lab directory: None (the default, `.lab`) unless an xdist worker."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker:
        return None
    base = Path(os.environ.get("FLEET_LAB_DIR") or REPO / ".lab")
    return base.with_name(f"{base.name}-{worker}")


@pytest.fixture(scope="session")
def lab() -> Iterator[Lab]:
    """The running lab: tower, rig and gateway (see tests/lab/README.md)."""
    the_lab = Lab(root=session_lab_dir())
    with the_lab.locked():
        the_lab.up()
        try:
            yield the_lab
        finally:
            the_lab.down()


@pytest.fixture(scope="module")
def systemd_hosts(lab: Lab) -> Iterator[list[nspawn.SystemdHost]]:
    """The lab's real systemd hosts (rtx3090 and rtx5070: one GPU each; apu: CPU only),
    booted for one test module and powered off after it (the lab's `down` also takes them
    down)."""
    hosts = nspawn.boot(lab)
    try:
        yield hosts
    finally:
        nspawn.halt(lab, hosts)


@pytest.fixture(scope="module")
def model_store(lab: Lab) -> Iterator[store.ModelStore]:
    """The lab's model store (tests/lab/store.py), up for one test module."""
    running = store.start(lab)
    try:
        yield running
    finally:
        running.stop(lab)


@pytest.fixture(scope="module")
def devbox(request: pytest.FixtureRequest) -> Iterator[devbox_host.Devbox]:
    """The lab's real-engine host (tests/lab/devbox.py: Docker, no GPU) with the real
    vLLM CPU and llama-server images and their tiny models, up for one test module;
    skipped (with the reason) unless both engines are wanted and installed, before the
    lab comes up."""
    from .real import CACHE, llamacpp, require, vllm

    require(vllm.INSTALLED, "vLLM")
    require(llamacpp.INSTALLED, "llama-server")
    lab: Lab = request.getfixturevalue("lab")
    models = {"vllm": vllm.model_dir(), "gguf": llamacpp.model_path()}
    key = hashlib.sha256(f"{vllm.rootfs_tar()}\n{llamacpp.rootfs_tar()}".encode()).hexdigest()
    images = (vllm.import_image, llamacpp.import_image)
    running = devbox_host.start(lab, images, models, (CACHE, key[:12]))
    try:
        yield running
    finally:
        devbox_host.stop(lab, running)
