"""`python -m tests.lab prepare systemd|engines`: build what the lab keeps in its cache
before the tests run, so that a test session on a new machine costs what it costs on one
whose cache is warm.

Called by tests/lab/install.sh: `systemd` (the systemd hosts' rootfs, mmdebstrap: about a
minute, mostly downloads) beside the real engines' installs, `engines` once they are in
(the tiny models, both engine images' rootfs tars, and the devbox's Docker data root with
both images imported: `docker import` of the 2.4 GB vLLM image is ~100 s). Every part is
the lab's own first-use build (`nspawn_layer.ensure_rootfs`, `real.vllm.model_dir`, ...),
idempotent, locked against a second builder and cached in FLEET_LAB_CACHE: what is
already there costs a look. An engine that is not installed (FLEET_REAL_ENGINES=0) is
left out, as its tests are.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .cache import CACHE

Part = tuple[str, Callable[[], object]]


def systemd_parts() -> list[Part]:
    """The systemd hosts' shared rootfs."""
    from .nspawn_layer import ensure_rootfs

    return [("systemd hosts' rootfs", ensure_rootfs)]


def engine_parts() -> list[Part]:
    """The real engines' models and image tars, each engine if it is installed."""
    from .real import llamacpp, vllm, wanted

    parts: list[Part] = []
    if wanted() and vllm.INSTALLED.exists():
        parts += [("tiny Llama (vLLM)", vllm.model_dir), ("vLLM image rootfs", vllm.rootfs_tar)]
    if wanted() and llamacpp.INSTALLED.exists():
        parts += [
            ("tiny GGUF models", lambda: (llamacpp.model_path(), llamacpp.draft_model_path())),
            ("llama-server image rootfs", llamacpp.rootfs_tar),
        ]
    return parts


def devbox_engine() -> str:
    """The devbox's cached Docker data root with both real images imported, made by
    bringing a devbox up (and down) in a lab of one small host under the cache."""
    from . import devbox
    from .lab import Lab
    from .real import llamacpp, vllm
    from .spec import cpubox

    key = hashlib.sha256(f"{vllm.rootfs_tar()}\n{llamacpp.rootfs_tar()}".encode()).hexdigest()
    refs = (f"{vllm.IMAGE}:{vllm.TAG}", f"{llamacpp.IMAGE}:{llamacpp.TAG}")
    if all(ref in imported(CACHE / f"{devbox.ENGINE_CACHE}{key[:12]}") for ref in refs):
        return "cached"
    lab = Lab(root=CACHE / "prepare-lab", hosts=(cpubox(),))
    with lab.locked(timeout=1800):
        lab.up()
        try:
            models = {"vllm": vllm.model_dir(), "gguf": llamacpp.model_path()}
            images = (vllm.import_image, llamacpp.import_image)
            running = devbox.start(lab, images, models, (CACHE, key[:12]))
            devbox.stop(lab, running)
        finally:
            lab.down()
    return "imported"


def imported(data_root: Path) -> str:
    """The image references a Docker data root holds (its repositories.json, as text)."""
    found = sorted(data_root.glob("image/*/repositories.json"))
    return "".join(path.read_text(errors="replace") for path in found)


def run(parts: list[Part]) -> list[str]:
    """Build the parts side by side; one line per part (what, seconds)."""

    def timed(part: Part) -> str:
        started = time.monotonic()
        part[1]()
        return f"{part[0]}: {time.monotonic() - started:.1f}s"

    if not parts:
        return []
    with ThreadPoolExecutor(max_workers=len(parts)) as pool:
        return list(pool.map(timed, parts))


def prepare(what: str) -> list[str]:
    """Build `what` (systemd or engines) into the cache; one line per part."""
    if what == "systemd":
        return run(systemd_parts())
    parts = engine_parts()
    said = run(parts)
    if len(parts) == 4:  # both engines: their images go into the devbox's cached engine
        started = time.monotonic()
        done = devbox_engine()
        said.append(f"devbox engine ({done}): {time.monotonic() - started:.1f}s")
    return said
