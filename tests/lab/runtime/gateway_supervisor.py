"""Runs the gateway host's LiteLLM proxies, one per port, and starts, stops and restarts
them on request.

Started by the lab inside the gateway host's mount namespace (so a proxy reads that host's
/etc/litellm/config.yaml when it starts). Requests arrive over a unix socket, one line
each, from `fleet-gateway-restart` and `fleet-gateway-proxy` (gateway_restart.py):

    restart        restart every running proxy in place (each on its own port)
    start PORT     start a proxy on PORT (restarted if one runs there), wait until ready
    stop PORT      SIGTERM the proxy on PORT and wait for it to exit (SIGKILL after
                   STOP_TIMEOUT: LiteLLM finishes in-flight requests first)
    status         is any proxy ready?

The answer is `ok` (once done), or `error <one-line reason>` (a proxy that does not come
up, e.g. with a broken config). Each proxy logs to <log dir>/litellm-<port>.log and its
pid is in <run dir>/litellm-<port>.pid.

Proxies are forked from litellm_zygote.py, which has imported LiteLLM once (a proxy is
ready in ~3 s instead of ~12 s of one core); FLEET_LAB_LITELLM_FORK=0 starts each with a
fresh interpreter, as an operator's service manager would (bench/downtime_bench.py does,
so that its in-place restart costs what it costs on a real gateway).

usage: gateway_supervisor.py --socket S --logs DIR --run DIR --ports P,Q -- LITELLM-COMMAND...
(the command's `--port` value is replaced per proxy; the first of --ports starts at once)
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

READY_TIMEOUT = 180.0
STOP_TIMEOUT = 40.0
ZYGOTE = Path(__file__).with_name("litellm_zygote.py")


class Started:
    """A proxy process a fresh interpreter runs (the supervisor is its parent)."""

    def __init__(self, command: list[str], log: Path) -> None:
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                command,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.pid = self.proc.pid

    def poll(self) -> int | None:
        return self.proc.poll()


class Zygote:
    """litellm_zygote.py: forks proxies from one interpreter that has imported LiteLLM."""

    def __init__(self, command: list[str]) -> None:
        python = str(Path(command[0]).with_name("python"))
        self.proc = subprocess.Popen(
            [python, str(ZYGOTE)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.lock = threading.Lock()
        self.ready = self.proc.stdout is not None and self.proc.stdout.readline().strip()

    def ask(self, *words: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with self.lock:
            self.proc.stdin.write("\t".join(words) + "\n")
            self.proc.stdin.flush()
            return self.proc.stdout.readline().strip()

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=10)


class Forked:
    """A proxy process the zygote forked (the zygote is its parent and reaps it)."""

    def __init__(self, zygote: Zygote, command: list[str], log: Path) -> None:
        self.zygote = zygote
        answer = zygote.ask("spawn", str(log), *command)
        if not answer.isdigit():
            raise RuntimeError(f"litellm zygote: {answer}")
        self.pid = int(answer)

    def poll(self) -> int | None:
        answer = self.zygote.ask("poll", str(self.pid))
        return int(answer.split()[1]) if answer.startswith("exited") else None


class Proxy:
    """One LiteLLM process on one port."""

    def __init__(
        self, command: list[str], port: int, logs: Path, run: Path, zygote: Zygote | None
    ) -> None:
        at = command.index("--port") + 1
        self.command = [*command[:at], str(port), *command[at + 1 :]]
        host = command[command.index("--host") + 1]
        self.port, self.url = port, f"http://{host}:{port}/health/liveliness"
        self.log, self.pidfile = logs / f"litellm-{port}.log", run / f"litellm-{port}.pid"
        self.zygote = zygote
        self.proc: Started | Forked | None = None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        """Start the proxy, appending its output to its log."""
        with self.log.open("ab") as out:
            how = "forked" if self.zygote else "starting"
            out.write(f"--- fleet-lab: {how} {' '.join(self.command)}\n".encode())
        if self.zygote is not None:
            self.proc = Forked(self.zygote, self.command, self.log)
        else:
            self.proc = Started(self.command, self.log)
        self.pidfile.write_text(str(self.proc.pid))

    def stop(self) -> None:
        """SIGTERM, wait for the exit (LiteLLM drains first), SIGKILL after STOP_TIMEOUT."""
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        if not self.exited_within(STOP_TIMEOUT):
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.exited_within(10.0)
        self.pidfile.unlink(missing_ok=True)

    def exited_within(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while self.proc is not None and self.proc.poll() is None:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        return True

    def ready(self) -> bool:
        """Does the proxy answer its liveliness probe?"""
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
            code = self.proc.poll() if self.proc is not None else None
            if code is not None:
                return f"error litellm exited with code {code}: {self.last_error()}"
            if self.ready():
                return "ok"
            time.sleep(0.3)
        return f"error litellm not ready after {READY_TIMEOUT:.0f}s: {self.last_error()}"

    def last_error(self) -> str:
        """The most telling line of the proxy's last output (its exception, if any)."""
        lines = self.log.read_text(errors="replace").splitlines()[-200:]
        starts = [i for i, ln in enumerate(lines) if ln.startswith("--- fleet-lab:")]
        run = lines[max(starts, default=0) :]
        errors = [ln for ln in run if "Error" in ln or "Exception" in ln]
        tail = errors[-1] if errors else (run[-1] if run else "no output")
        return tail.strip()[:300]


class Supervisor:
    """The proxies by port, changed one request at a time."""

    def __init__(self, command: list[str], ports: list[int], logs: Path, run: Path) -> None:
        fork = os.environ.get("FLEET_LAB_LITELLM_FORK", "1") != "0"
        self.zygote = Zygote(command) if fork else None
        if self.zygote is not None and self.zygote.ready != "ready":
            raise SystemExit(f"litellm zygote did not start: {self.zygote.ready}")
        self.proxies = {port: Proxy(command, port, logs, run, self.zygote) for port in ports}
        self.lock = threading.Lock()

    def answer(self, request: str) -> str:
        """Carry out one request line; the answer line."""
        verb, _, arg = request.partition(" ")
        if verb not in ("restart", "start", "stop"):  # status: answered while others wait
            ready = any(p.running and p.ready() for p in self.proxies.values())
            return "ok" if ready else "error not ready"
        with self.lock:
            if verb == "restart":
                running = [p for p in self.proxies.values() if p.running]
                for proxy in running or [next(iter(self.proxies.values()))]:
                    proxy.stop()
                    proxy.start()
                    if (result := proxy.wait_ready()) != "ok":
                        return result
                return "ok"
            proxy = self.proxies.get(int(arg)) if arg.isdigit() else None
            if proxy is None:
                return f"error no proxy port {arg!r} (ports {sorted(self.proxies)})"
            proxy.stop()
            if verb == "stop":
                return "ok"
            proxy.start()
            return proxy.wait_ready()

    def stop_all(self) -> None:
        for proxy in self.proxies.values():
            proxy.stop()
        if self.zygote is not None:
            self.zygote.close()


def serve(supervisor: Supervisor, sock_path: Path) -> None:
    """Answer requests until terminated (each connection in its own thread, so a status
    question is answered while a proxy starts)."""
    sock_path.unlink(missing_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(sock_path))
    server.listen(8)

    def handle(conn: socket.socket) -> None:
        with conn:
            request = conn.makefile().readline().strip()
            conn.sendall((supervisor.answer(request) + "\n").encode())

    while True:
        conn, _ = server.accept()
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


def option(argv: list[str], name: str) -> str:
    """The value after `name`."""
    return argv[argv.index(name) + 1]


def main(argv: list[str]) -> int:
    """Start the first proxy and serve requests."""
    split = argv.index("--")
    ours, command = argv[:split], argv[split + 1 :]
    ports = [int(p) for p in option(ours, "--ports").split(",")]
    supervisor = Supervisor(
        command, ports, Path(option(ours, "--logs")), Path(option(ours, "--run"))
    )

    def terminate(_signum: int, _frame: object) -> None:
        supervisor.stop_all()
        sys.exit(0)

    signal.signal(signal.SIGTERM, terminate)
    supervisor.proxies[ports[0]].start()
    serve(supervisor, Path(option(ours, "--socket")))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
