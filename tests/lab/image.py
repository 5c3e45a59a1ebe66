"""The stand-in engine images: a rootfs with this machine's python3.11 (and the libraries
`ldd` lists), busybox, the stand-in `vllm` package, `/app/llama-server` and a small `curl`,
imported with `docker import` (nothing is pulled) and tagged with the real image names.

Each vllm/vllm-openai version tag is the same rootfs with its own ENTRYPOINT and
FLEET_LAB_VLLM_VERSION: `vllm serve` since v0.10, `python3 -m
vllm.entrypoints.openai.api_server` before. The ghcr.io/ggml-org/llama.cpp server tags
are that rootfs too, with ENTRYPOINT /app/llama-server, WORKDIR /app and
LLAMA_ARG_HOST=0.0.0.0 as the ggml-org server images set them; `server-cuda*` tags are
the CUDA build (FLEET_LAB_LLAMACPP_BACKEND=cuda: uses the GPUs handed over), `server` /
`server-b<N>` the CPU build, as upstream; a `-b<N>` tag makes the stand-in build N
(FLEET_LAB_LLAMACPP_BUILD: `server-b6100` logs and parses flags as b6100 does), the
moving tags are the stand-in's default, b11434. The lmsysorg/sglang tags (SGLANG_TAGS) are
that rootfs with a `sglang` package whose `launch_server` runs the SGLang stand-in
(`engine/sglang`), WORKDIR /sgl-workspace and no entrypoint.
"""

from __future__ import annotations

import hashlib
import io
import re
import subprocess
import tarfile
from pathlib import Path

import docker

ENGINE_SRC = Path(__file__).resolve().parent / "engine"
PYTHON = Path("/usr/bin/python3.11")
STDLIB = Path("/usr/lib/python3.11")
SKIP_STDLIB = {
    "test",
    "idlelib",
    "tkinter",
    "lib2to3",
    "ensurepip",
    "turtledemo",
    "pydoc_data",
    "distutils",
    "unittest",
    "config-3.11-x86_64-linux-gnu",
    "site-packages",
    "dist-packages",
}
SKIP_DYNLOAD = re.compile(
    r"^(_test|_ctypes_test|_curses|_dbm|nis|ossaudiodev|readline|"
    r"_sqlite3|xxlimited|_xx|audioop|_tkinter)"
)
SITE = "usr/local/lib/python3.11/dist-packages/vllm"
VLLM_SCRIPT = "#!/usr/bin/python3\nimport sys\nfrom vllm.cli import main\nsys.exit(main())\n"
CURL_SCRIPT = (
    "#!/usr/bin/python3\nimport sys\nfrom vllm.curl import main\nsys.exit(main(sys.argv[1:]))\n"
)
SGLANG_SITE = "usr/local/lib/python3.11/dist-packages/sglang"
SGLANG_LAUNCH = "import sys\nfrom vllm.sglang.main import main\nsys.exit(main())\n"
LLAMA_SERVER_SCRIPT = (
    "#!/usr/bin/python3\nimport sys\nfrom vllm.llamacpp.main import main\nsys.exit(main())\n"
)
IMAGE = "vllm/vllm-openai"
ENTRY_SERVE = '["vllm", "serve"]'
ENTRY_API = '["python3", "-m", "vllm.entrypoints.openai.api_server"]'
SGLANG_IMAGE = "lmsysorg/sglang"
SGLANG_TAGS = (f"{SGLANG_IMAGE}:v0.5.23",)
LLAMACPP_IMAGE = "ghcr.io/ggml-org/llama.cpp"
LLAMACPP_BUILD = "b6100"
LLAMACPP_TAGS = tuple(
    f"{LLAMACPP_IMAGE}:{tag}"
    for tag in (
        "server",
        f"server-{LLAMACPP_BUILD}",
        "server-cuda",
        f"server-cuda-{LLAMACPP_BUILD}",
    )
)


def shared_libraries(binaries: list[Path]) -> set[Path]:
    """The libraries `ldd` lists for the given binaries (and the loader)."""
    found: set[Path] = set()
    for binary in binaries:
        out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True).stdout
        for match in re.finditer(r"(/\S+\.so[.\d]*)", out):
            found.add(Path(match.group(1)))
    return found


def in_usr(path: Path) -> str:
    """Where a host file goes in the usr-merged rootfs ('/lib/x' -> 'usr/lib/x')."""
    text = str(path).lstrip("/")
    return text if text.startswith("usr/") else f"usr/{text}"


def add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    """A regular file from memory."""
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), mode
    tar.addfile(info, io.BytesIO(data))


def add_link(tar: tarfile.TarFile, name: str, target: str) -> None:
    """A symbolic link."""
    info = tarfile.TarInfo(name)
    info.type, info.linkname = tarfile.SYMTYPE, target
    tar.addfile(info)


def add_dir(tar: tarfile.TarFile, name: str, mode: int = 0o755) -> None:
    """A directory."""
    info = tarfile.TarInfo(name)
    info.type, info.mode = tarfile.DIRTYPE, mode
    tar.addfile(info)


def stdlib_filter(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    """Leave test suites, GUI and build files out of the image."""
    parts = Path(info.name).parts
    if len(parts) > 4 and parts[4] in SKIP_STDLIB:
        return None
    if "lib-dynload" in parts and SKIP_DYNLOAD.match(parts[-1]):
        return None
    return info


def add_python(tar: tarfile.TarFile) -> None:
    """python3.11, its standard library and every library they load."""
    dynload = [p for p in (STDLIB / "lib-dynload").glob("*.so") if not SKIP_DYNLOAD.match(p.name)]
    for lib in sorted(shared_libraries([PYTHON, *dynload])):
        tar.add(str(lib.resolve()), arcname=in_usr(lib))
    tar.add(str(PYTHON), arcname="usr/bin/python3.11")
    add_link(tar, "usr/bin/python3", "python3.11")
    add_link(tar, "usr/bin/python", "python3.11")
    tar.add(str(STDLIB), arcname="usr/lib/python3.11", filter=stdlib_filter)


def add_busybox(tar: tarfile.TarFile) -> None:
    """busybox and its applets (sh, ps, cat, sleep, ...)."""
    tar.add("/bin/busybox", arcname="usr/bin/busybox")
    applets = subprocess.run(["/bin/busybox", "--list"], capture_output=True, text=True).stdout
    for applet in sorted(set(applets.split()) - {"busybox", "python3", "curl"}):
        add_link(tar, f"usr/bin/{applet}", "busybox")


def add_engine(tar: tarfile.TarFile) -> None:
    """The stand-in package as `vllm`, its console script and curl."""
    for path in sorted(ENGINE_SRC.rglob("*.py")):
        tar.add(str(path), arcname=f"{SITE}/{path.relative_to(ENGINE_SRC)}")
    add_bytes(tar, "usr/local/bin/vllm", VLLM_SCRIPT.encode(), 0o755)
    add_bytes(tar, "app/llama-server", LLAMA_SERVER_SCRIPT.encode(), 0o755)
    add_bytes(tar, "usr/bin/curl", CURL_SCRIPT.encode(), 0o755)
    add_bytes(tar, f"{SGLANG_SITE}/__init__.py", b"")
    add_bytes(tar, f"{SGLANG_SITE}/launch_server.py", SGLANG_LAUNCH.encode())


def add_base(tar: tarfile.TarFile) -> None:
    """Directories, usr-merge links and the files a container expects."""
    for name in (
        "usr",
        "usr/bin",
        "usr/lib",
        "usr/lib64",
        "usr/local",
        "usr/local/bin",
        "etc",
        "root",
        "vllm-workspace",
        "app",
        "proc",
        "sys",
        "dev",
        "run",
        "var",
    ):
        add_dir(tar, name)
    add_dir(tar, "tmp", 0o1777)
    for link in ("bin", "sbin", "lib", "lib64"):
        add_link(tar, link, f"usr/{'bin' if link == 'sbin' else link}")
    add_bytes(tar, "etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n")
    add_bytes(tar, "etc/group", b"root:x:0:\n")


def source_digest() -> str:
    """Cache key: the engine's sources and the host python."""
    h = hashlib.sha256(PYTHON.read_bytes()[:4096])
    h.update(LLAMA_SERVER_SCRIPT.encode())
    h.update(SGLANG_LAUNCH.encode())
    for path in sorted(ENGINE_SRC.rglob("*.py")):
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def rootfs_tar(cache_dir: Path) -> Path:
    """Build (or reuse) the image's rootfs tarball."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    target = cache_dir / f"vllm-standin-{source_digest()}.tar"
    if target.exists():
        return target
    tmp = target.with_suffix(".tmp")
    with tarfile.open(tmp, "w") as tar:
        add_base(tar)
        add_python(tar)
        add_busybox(tar)
        add_engine(tar)
    tmp.rename(target)
    return target


def changes(version: str) -> list[str]:
    """Dockerfile instructions baked into one version's image."""
    entry = ENTRY_API if version.startswith("0.9") else ENTRY_SERVE
    return [
        "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        f"ENV FLEET_LAB_VLLM_VERSION={version}",
        "ENV VLLM_USAGE_SOURCE=production-docker-image",
        "ENV PYTHONDONTWRITEBYTECODE=1",
        "WORKDIR /vllm-workspace",
        f"ENTRYPOINT {entry}",
        "CMD []",
    ]


def sglang_changes(tag: str) -> list[str]:
    """Dockerfile instructions of an lmsysorg/sglang image: no entrypoint (compose gives
    `python3 -m sglang.launch_server`), WORKDIR /sgl-workspace as upstream."""
    return [
        "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        f"ENV FLEET_LAB_SGLANG_VERSION={tag.rsplit(':', 1)[1].lstrip('v')}",
        "ENV PYTHONDONTWRITEBYTECODE=1",
        "WORKDIR /sgl-workspace",
        "ENTRYPOINT []",
        'CMD ["python3", "-m", "sglang.launch_server", "--help"]',
    ]


def llamacpp_changes(tag: str) -> list[str]:
    """Dockerfile instructions of a ggml-org/llama.cpp server image (CUDA or CPU build);
    a tag naming a build (`server-b6100`) makes the stand-in that build, the moving ones
    (`server`, `server-cuda`) are its own default, b11434."""
    version = tag.split(":", 1)[1]
    backend = "cuda" if version.startswith("server-cuda") else "cpu"
    build = re.search(r"-b(\d+)$", version)
    return [
        "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "ENV LLAMA_ARG_HOST=0.0.0.0",
        f"ENV FLEET_LAB_LLAMACPP_BACKEND={backend}",
        *([f"ENV FLEET_LAB_LLAMACPP_BUILD={build.group(1)}"] if build else []),
        "ENV PYTHONDONTWRITEBYTECODE=1",
        "WORKDIR /app",
        'ENTRYPOINT ["/app/llama-server"]',
        "CMD []",
    ]


def install_images(docker_host: str, tar: Path, tags: tuple[str, ...]) -> None:
    """Import the rootfs once and tag every requested image.

    A bare tag (`v0.18.0`, `latest`) is a vllm/vllm-openai version; a full reference
    is a llama.cpp server image (`ghcr.io/ggml-org/llama.cpp:server-cuda`, see
    LLAMACPP_TAGS) or an SGLang image (`lmsysorg/sglang:v0.5.23`, SGLANG_TAGS).
    """
    client = docker.DockerClient(base_url=docker_host, version="1.41", timeout=120)
    try:
        base = "v0.18.0"
        client.api.import_image_from_file(
            str(tar), repository=IMAGE, tag=base, changes=changes(base[1:])
        )
        for tag in tags:
            if tag == base:
                continue
            if tag == "latest":
                client.api.tag(f"{IMAGE}:{base}", IMAGE, "latest")
                continue
            repository, version = tag.rsplit(":", 1) if ":" in tag else (IMAGE, tag)
            if tag.startswith(SGLANG_IMAGE):
                steps = sglang_changes(tag)
            else:
                steps = llamacpp_changes(tag) if ":" in tag else changes(tag[1:])
            holder = client.api.create_container(f"{IMAGE}:{base}")
            client.api.commit(holder["Id"], repository=repository, tag=version, changes=steps)
            client.api.remove_container(holder["Id"])
    finally:
        client.close()
