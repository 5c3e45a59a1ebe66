"""Run the lab's stand-in engines as plain subprocesses (no docker) and talk to them.

The image installs tests/lab/engine as the package `vllm` and runs the console scripts
of tests/lab/image.py (`vllm serve ...`, `/app/llama-server ...`) with the machine's
python3.11; here a temporary directory plays the image: `site/vllm` links to the engine
package (PYTHONPATH=site), `bin/` holds the same scripts, `gpu/` the simulated GPUs
(FLEET_LAB_GPU_DIR) and each stand-in logs to a file. The environment is built from
scratch, so no FLEET_LAB_* setting of the caller leaks in.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.lab.image import LLAMA_SERVER_SCRIPT, VLLM_SCRIPT
from tests.waiting import wait_until

REPO = Path(__file__).resolve().parents[3]
ENGINE = REPO / "tests" / "lab" / "engine"
PYTHON = "/usr/bin/python3.11" if Path("/usr/bin/python3.11").exists() else sys.executable
RTX_3090 = ("NVIDIA GeForce RTX 3090", 24576)


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Image:
    """A temporary directory laid out like the engine image."""

    root: Path

    def __post_init__(self) -> None:
        (self.root / "site").mkdir(parents=True, exist_ok=True)
        link = self.root / "site" / "vllm"
        if not link.exists():
            link.symlink_to(ENGINE)
        (self.root / "bin").mkdir(exist_ok=True)
        (self.root / "bin" / "vllm").write_text(VLLM_SCRIPT)
        (self.root / "bin" / "llama-server").write_text(LLAMA_SERVER_SCRIPT)
        self.gpus([])

    @property
    def gpu_dir(self) -> Path:
        """FLEET_LAB_GPU_DIR: gpus.json and usage/."""
        return self.root / "gpu"

    def gpus(self, cards: list[tuple[str, int]]) -> None:
        """The host's simulated GPUs (name, MiB)."""
        self.gpu_dir.mkdir(exist_ok=True)
        table = [
            {"index": i, "name": name, "memory_mib": mib, "uuid": f"GPU-test-{i}"}
            for i, (name, mib) in enumerate(cards)
        ]
        (self.gpu_dir / "gpus.json").write_text(json.dumps(table))

    def usage(self) -> list[dict[str, Any]]:
        """What engines recorded for nvidia-smi."""
        return [json.loads(p.read_text()) for p in sorted(self.gpu_dir.glob("usage/*.json"))]

    def env(self, gpus: str | None, extra: dict[str, str]) -> dict[str, str]:
        """A container's environment: GPUs handed over (`0,1`) or none."""
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.root),
            "PYTHONPATH": str(self.root / "site"),
            "PYTHONDONTWRITEBYTECODE": "1",
            "FLEET_LAB_GPU_DIR": str(self.gpu_dir),
            "FLEET_LAB_CONTAINER_ID": uuid.uuid4().hex,
            "FLEET_LAB_STUCK_FILE": str(self.root / "stuck"),
            "FLEET_LAB_LOAD_SECONDS": "0.05",
            "VLLM_LOG_STATS_INTERVAL": "0",
        }
        if gpus is not None:
            env["FLEET_LAB_GPUS"] = gpus
        return {**env, **extra}


@dataclass
class StandIn:
    """One running stand-in engine."""

    argv: list[str]
    env: dict[str, str]
    log_path: Path
    port: int
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def start(self, cwd: Path) -> StandIn:
        """Launch it, logging stdout and stderr to one file."""
        with self.log_path.open("wb") as out:
            self.proc = subprocess.Popen(
                self.argv, env=self.env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT
            )
        return self

    def url(self, path: str) -> str:
        """http://127.0.0.1:<port><path>."""
        return f"http://127.0.0.1:{self.port}{path}"

    def log(self) -> str:
        """Everything it printed so far."""
        return self.log_path.read_text(errors="replace")

    def wait_healthy(self, timeout: float = 15.0) -> StandIn:
        """Until /health answers 200 (fails with the log if it dies first)."""
        proc = self.proc
        assert proc is not None

        def healthy() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"exited {proc.returncode}:\n{self.log()}")
            try:
                return request("GET", self.url("/health"), timeout=1)[0] == 200
            except OSError:
                return False

        wait_until(healthy, timeout, "/health to answer 200", interval=0.02, detail=self.log)
        return self

    def wait_exit(self, timeout: float = 10.0) -> int:
        """Its exit code."""
        assert self.proc is not None
        return self.proc.wait(timeout=timeout)

    def stop(self) -> None:
        """SIGTERM (docker stop), SIGKILL if it lingers."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def start_vllm(
    image: Image, args: list[str], env: dict[str, str], gpus: str | None = "0"
) -> StandIn:
    """`vllm serve <args>` on a free port, like the v0.18.0 image runs it."""
    port = free_port()
    argv = [PYTHON, str(image.root / "bin" / "vllm"), "serve", *args, "--port", str(port)]
    full = image.env(gpus, {"FLEET_LAB_VLLM_VERSION": "0.18.0", **env})
    log = image.root / f"vllm-{port}.log"
    return StandIn(argv, full, log, port).start(image.root)


def start_llama(
    image: Image, args: list[str], env: dict[str, str], gpus: str | None = "0", cuda: bool = True
) -> StandIn:
    """`/app/llama-server <args>` on a free port, as the server(-cuda) image runs it."""
    port = free_port()
    argv = [PYTHON, str(image.root / "bin" / "llama-server"), *args, "--port", str(port)]
    backend = {"FLEET_LAB_LLAMACPP_BACKEND": "cuda" if cuda else "cpu"}
    full = image.env(gpus, {"LLAMA_ARG_HOST": "127.0.0.1", **backend, **env})
    log = image.root / f"llama-{port}.log"
    return StandIn(argv, full, log, port).start(image.root)


def request(method: str, url: str, body: Any = None, timeout: float = 30.0) -> tuple[int, bytes]:
    """One HTTP request: (status, body)."""
    host, _, rest = url.removeprefix("http://").partition("/")
    conn = http.client.HTTPConnection(host, timeout=timeout)
    try:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if data is not None else {}
        conn.request(method, "/" + rest, body=data, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def post(url: str, body: Any) -> tuple[int, Any]:
    """POST JSON, decode JSON (None for an empty body)."""
    status, data = request("POST", url, body)
    return status, json.loads(data) if data else None


def get(url: str) -> tuple[int, Any]:
    """GET, decoded as JSON when it is JSON."""
    status, data = request("GET", url)
    try:
        return status, json.loads(data)
    except ValueError:
        return status, data.decode()


def stream(url: str, body: dict[str, Any]) -> tuple[float, list[tuple[float, Any]]]:
    """A streamed request: (when it was sent, [(arrival, event)...]), monotonic seconds."""
    host, _, rest = url.removeprefix("http://").partition("/")
    conn = http.client.HTTPConnection(host, timeout=30)
    events: list[tuple[float, Any]] = []
    try:
        sent = time.monotonic()
        conn.request(
            "POST",
            "/" + rest,
            json.dumps({**body, "stream": True}),
            {"Content-Type": "application/json"},
        )
        response = conn.getresponse()
        assert response.status == 200, response.read()
        while line := response.readline():
            text = line.decode().strip()
            if text.startswith("data: "):
                payload = text[6:]
                events.append(
                    (time.monotonic(), payload if payload == "[DONE]" else json.loads(payload))
                )
        return sent, events
    finally:
        conn.close()


def metrics(text: str) -> dict[str, float]:
    """Prometheus samples: `name{labels}` -> value."""
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def sample(samples: dict[str, float], name: str) -> float:
    """The value of the one series named `name` (whatever its labels)."""
    found = [v for k, v in samples.items() if k.split("{")[0] == name]
    assert len(found) == 1, (name, found)
    return found[0]


def wait_for(
    engine: StandIn, ready: Callable[[dict[str, float]], bool], timeout: float = 10.0
) -> dict[str, float]:
    """The engine's /metrics samples once `ready` holds for them (polled; fails with the
    last samples after `timeout`), so a test waits for a state rather than a fixed time."""
    last: list[dict[str, float]] = [{}]

    def sampled() -> dict[str, float]:
        last[0] = metrics(get(engine.url("/metrics"))[1])
        return last[0] if ready(last[0]) else {}

    return wait_until(sampled, timeout, "the metrics", interval=0.01, detail=lambda: str(last[0]))


def metrics_while_posting(
    engine: StandIn, body: dict[str, Any], requests: int, gauges: tuple[str, str]
) -> tuple[dict[str, float], dict[str, float]]:
    """The engine's /metrics samples once all `requests` chat requests sent at once are in
    the engine (the `gauges` of running and waiting requests add up to them), and after
    they all ended."""
    url = engine.url("/v1/chat/completions")
    threads = [threading.Thread(target=post, args=(url, body)) for _ in range(requests)]
    for thread in threads:
        thread.start()
    running, waiting = gauges
    during = wait_for(engine, lambda m: sample(m, running) + sample(m, waiting) == requests)
    for thread in threads:
        thread.join()
    return during, metrics(get(engine.url("/metrics"))[1])
