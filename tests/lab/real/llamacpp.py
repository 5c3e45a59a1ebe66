"""The real llama-server (llama.cpp b11434, CPU build) in the lab: its binary, the tiny
GGUF models it serves, a plain process of it, and its server image.

tests/lab/install-llamacpp.sh builds the binary once into `<cache>/llama-server-b11434/`
and writes the stamp INSTALLED last. `serve` runs it as a plain process on loopback and
yields once `/health` answers 200 (it answers 503 while the model loads; the tiny model
loads in well under a second). `import_image` puts it into a lab host's Docker engine as
`ghcr.io/ggml-org/llama.cpp:server-b11434`, built the way upstream's
`.devops/cpu.Dockerfile` (target `server`) builds it: the binary at /app/llama-server,
ENTRYPOINT ["/app/llama-server"], WORKDIR /app, ENV LLAMA_ARG_HOST=0.0.0.0, and curl for
its HEALTHCHECK; the rootfs is the binary, the libraries `ldd` lists for it and for curl,
and busybox (a shell), cached as a tar next to the binary.
"""

from __future__ import annotations

import contextlib
import hashlib
import subprocess
import tarfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from tests.lab import image
from tests.lab.real import CACHE, tinygguf
from tests.waiting import wait_until

BUILD = 11434
HOME = CACHE / f"llama-server-b{BUILD}"
INSTALLED = HOME / "INSTALLED"
IMAGE = "ghcr.io/ggml-org/llama.cpp"
TAG = f"server-b{BUILD}"
# -lv 4: the build line, the model's size, the KV cache's cells and types are logged at
# verbosity 4 only (the default, 3, prints the slots and the context per slot).
SEAT_ARGS: tuple[str, ...] = ("-lv", "4")
READY_TIMEOUT = 60.0
CHANGES = (
    "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "ENV LLAMA_ARG_HOST=0.0.0.0",
    "WORKDIR /app",
    'ENTRYPOINT ["/app/llama-server"]',
    "CMD []",
)
CURL = Path("/usr/bin/curl")


def binary() -> Path:
    """The installed llama-server."""
    return HOME / "llama-server"


def model_path() -> Path:
    """The tiny target GGUF (llama, 4 layers, hidden 256), made once, cached."""
    return tinygguf.cached(tinygguf.TARGET)


def draft_model_path() -> Path:
    """A smaller GGUF with the target's vocabulary, for speculative seats."""
    return tinygguf.cached(tinygguf.DRAFTER)


def health(port: int) -> int:
    """The HTTP status of `/health` (0: nothing answers)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as reply:
            return int(reply.status)
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return 0


@contextlib.contextmanager
def serve(port: int, log: Path, *flags: str) -> Iterator[subprocess.Popen[bytes]]:
    """llama-server on 127.0.0.1:`port` with `flags` (the tiny model unless they name a
    `-m`/`--model`), its output in `log`; yields once healthy, stops it at exit."""
    argv = [str(binary()), "--host", "127.0.0.1", "--port", str(port)]
    if not {"-m", "--model"} & set(flags):
        argv += ["-m", str(model_path())]
    with log.open("wb") as out:
        proc = subprocess.Popen([*argv, *flags], stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until(
            lambda: proc.poll() is not None or health(port) == 200,
            READY_TIMEOUT,
            "llama-server to be healthy",
            interval=0.05,
            error=RuntimeError,
        )
        if proc.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"llama-server exited {proc.returncode}:\n{tail}")
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _digest() -> str:
    """Cache key of the rootfs: the binary's and curl's bytes."""
    h = hashlib.sha256()
    for path in (binary(), CURL):
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def rootfs_tar() -> Path:
    """The image's rootfs tar, built once per binary."""
    target = HOME / f"image-rootfs-{_digest()}.tar"
    if target.exists():
        return target
    part = target.with_suffix(".part")
    with tarfile.open(part, "w") as tar:
        image.add_base(tar)
        image.add_busybox(tar)
        for lib in sorted(image.shared_libraries([binary(), CURL])):
            tar.add(str(lib.resolve()), arcname=image.in_usr(lib))
        tar.add(str(CURL), arcname="usr/bin/curl")
        tar.add(str(binary()), arcname="app/llama-server")
        for cert in ("/etc/ssl/certs/ca-certificates.crt",):
            if Path(cert).exists():
                tar.add(cert, arcname=cert.lstrip("/"))
    part.rename(target)
    return target


def import_image(docker_host: str) -> None:
    """`docker import` IMAGE:TAG into the engine at `docker_host` unless it is there."""
    import docker

    client = docker.DockerClient(base_url=docker_host, version="1.41", timeout=120)
    try:
        try:
            client.images.get(f"{IMAGE}:{TAG}")
            return
        except docker.errors.ImageNotFound:
            pass
        client.api.import_image_from_file(
            str(rootfs_tar()), repository=IMAGE, tag=TAG, changes=list(CHANGES)
        )
    finally:
        client.close()
