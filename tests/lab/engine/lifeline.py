"""The API server's hold on its EngineCore child, as vLLM's engine-core client keeps it.

The child's stdin is its lifeline: closing it (docker stop) makes the child free its GPU
memory and exit. Lines written to it are commands (`oom <prompt tokens>`: the OOM
switch). An unexpected death of the child ends the API server at once with vLLM's
`Engine core proc EngineCore died unexpectedly` line; a death the API server asked for
(the OOM switch) is handled by `EngineLink.kill_with_oom` instead.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time

from .logfmt import Log
from .oom import engine_dead_lines, uvicorn_shutdown
from .scheduler import env_float


class EngineLink:
    """The EngineCore child process and what the API server knows of its fate."""

    def __init__(self, proc: subprocess.Popen[bytes], log: Log) -> None:
        self.proc = proc
        self.log = log
        self.stopping = threading.Event()
        self.dying = threading.Event()
        self.dead = threading.Event()
        self.lock = threading.Lock()

    def watch(self) -> None:
        """Exit the API server when the engine dies on its own, as vLLM does."""

        def wait() -> None:
            self.proc.wait()
            if self.stopping.is_set() or self.dying.is_set():
                return
            self.log.line(
                "ERROR",
                "error",
                "Engine core proc EngineCore died unexpectedly, shutting down client.",
            )
            os._exit(1)

        threading.Thread(target=wait, daemon=True).start()

    def stop_on_signal(self) -> None:
        """SIGTERM/SIGINT (docker stop): close the engine's lifeline and exit 0."""

        def stop(_signum: int, _frame: object) -> None:
            self.stopping.set()
            if self.proc.stdin:
                self.proc.stdin.close()
            self.proc.wait(timeout=10)
            os._exit(0)

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)

    def kill_with_oom(self, prompt: int) -> bool:
        """Make the engine run out of memory on a prompt; False if it is already dying."""
        with self.lock:
            if self.dying.is_set():
                return False
            self.dying.set()
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(f"oom {prompt}\n".encode())
            self.proc.stdin.flush()
        except (OSError, ValueError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        engine_dead_lines(self.log)
        self.dead.set()
        threading.Thread(target=self.exit_later, daemon=True).start()
        return True

    def exit_later(self) -> None:
        """After FLEET_LAB_DEATH_SECONDS, uvicorn shuts down and the process exits 1."""
        time.sleep(env_float("FLEET_LAB_DEATH_SECONDS", 1.0))
        if self.stopping.is_set():
            return
        uvicorn_shutdown(self.log)
        os._exit(1)
