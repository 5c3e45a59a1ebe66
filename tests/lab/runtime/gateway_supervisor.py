"""Keeps the gateway host's LiteLLM proxy running and restarts it on request.

Started by the lab inside the gateway host's mount namespace (so the proxy reads that
host's /etc/litellm/config.yaml). `fleet-gateway-restart` (gateway_restart.py) asks it
over a unix socket to restart the proxy; the answer is `ok` once the proxy is ready
again, or `error <one-line reason>` when it does not come up (e.g. a broken config).

usage: gateway_supervisor.py --socket S --log L --pidfile P -- LITELLM-COMMAND...
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

READY_TIMEOUT = 120.0


class Proxy:
    """The LiteLLM child process."""

    def __init__(self, command: list[str], log: Path, pidfile: Path, url: str) -> None:
        self.command, self.log, self.pidfile, self.url = command, log, pidfile, url
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start the proxy, appending its output to the log."""
        with self.log.open("ab") as out:
            out.write(f"--- fleet-lab: starting {' '.join(self.command)}\n".encode())
            self.proc = subprocess.Popen(
                self.command,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.pidfile.write_text(str(self.proc.pid))

    def stop(self) -> None:
        """Stop the proxy (SIGTERM, then SIGKILL after 10 s)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def ready(self) -> bool:
        """Does the proxy answer its readiness probe?"""
        try:
            with urllib.request.urlopen(self.url, timeout=2) as response:
                return response.status == 200
        except urllib.error.HTTPError as err:
            err.close()
            return False
        except (urllib.error.URLError, OSError):
            return False

    def wait_ready(self) -> str:
        """'ok', or 'error <reason>' when the proxy exits or times out first."""
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                return f"error litellm exited with code {self.proc.returncode}: {self.last_error()}"
            if self.ready():
                return "ok"
            time.sleep(0.3)
        return f"error litellm not ready after {READY_TIMEOUT:.0f}s: {self.last_error()}"

    def last_error(self) -> str:
        """The most telling line of the proxy's last output (its exception, if any)."""
        lines = self.log.read_text(errors="replace").splitlines()[-200:]
        run = lines[max(i for i, ln in enumerate(lines) if ln.startswith("--- fleet-lab:")) :]
        errors = [ln for ln in run if "Error" in ln or "Exception" in ln]
        tail = errors[-1] if errors else (run[-1] if run else "no output")
        return tail.strip()[:300]


def serve(proxy: Proxy, sock_path: Path) -> None:
    """Answer restart requests until terminated."""
    sock_path.unlink(missing_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(sock_path))
    server.listen(4)
    while True:
        conn, _ = server.accept()
        with conn:
            request = conn.makefile().readline().strip()
            if request == "restart":
                proxy.stop()
                proxy.start()
                conn.sendall((proxy.wait_ready() + "\n").encode())
            else:
                conn.sendall(b"ok\n" if proxy.ready() else b"error not ready\n")


def option(argv: list[str], name: str) -> str:
    """The value after `name`."""
    return argv[argv.index(name) + 1]


def main(argv: list[str]) -> int:
    """Start the proxy and serve restart requests."""
    split = argv.index("--")
    ours, command = argv[:split], argv[split + 1 :]
    host, port = command[command.index("--host") + 1], command[command.index("--port") + 1]
    proxy = Proxy(
        command,
        Path(option(ours, "--log")),
        Path(option(ours, "--pidfile")),
        f"http://{host}:{port}/health/readiness",
    )

    def terminate(_signum: int, _frame: object) -> None:
        proxy.stop()
        sys.exit(0)

    signal.signal(signal.SIGTERM, terminate)
    proxy.start()
    serve(proxy, Path(option(ours, "--socket")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
