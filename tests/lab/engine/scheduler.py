"""Request scheduling shared by both stand-ins: slots, prefill and decode timing, counters.

A request waits for one of `slots` (vLLM's --max-num-seqs, llama-server's --parallel),
then prefills its prompt at `prefill_rate` tokens/s, so the first token arrives
prompt_tokens / prefill_rate seconds after it got its slot; the first token comes with the
prefill and each further one 1 / token_rate seconds after the previous (deadlines from the
first token, so n tokens span (n - 1) / token_rate seconds). Counters grow as tokens are
generated, not when a request ends. The stuck switch (FLEET_LAB_STUCK=1, or the file
FLEET_LAB_STUCK_FILE while it exists) holds every admitted request where it is: counted as
running, generating nothing. `dead` (the engine died) aborts every request.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STUCK_FILE = "/tmp/fleet-lab-stuck"
# While this file exists its number scales the token rate (0.6: 40% slower), as a GPU that
# throttles would, without changing the container's spec: `docker exec C sh -c 'echo 0.6 >
# /tmp/fleet-lab-slowdown'`.
SLOWDOWN_FILE = "/tmp/fleet-lab-slowdown"


def slowdown() -> float:
    """The factor the slow-down switch sets (1.0 when it is off or unreadable)."""
    try:
        factor = float(open(SLOWDOWN_FILE).read().strip())  # noqa: SIM115
    except (OSError, ValueError):
        return 1.0
    return factor if factor > 0 else 1.0


POLL = 0.02


class EngineDead(Exception):
    """The engine died while the request waited or ran."""


def env_float(name: str, default: float) -> float:
    """A float from the environment (the default when unset or empty)."""
    text = os.environ.get(name, "")
    return float(text) if text.strip() else default


def env_int(name: str) -> int | None:
    """An int from the environment, None when unset or empty."""
    text = os.environ.get(name, "")
    return int(text) if text.strip() else None


@dataclass(frozen=True)
class StuckSwitch:
    """The watchdog switch: stuck from the start, or while a file exists."""

    always: bool
    path: Path

    @classmethod
    def from_env(cls) -> StuckSwitch:
        """FLEET_LAB_STUCK=1 and FLEET_LAB_STUCK_FILE (default /tmp/fleet-lab-stuck)."""
        always = os.environ.get("FLEET_LAB_STUCK", "") not in ("", "0")
        return cls(always, Path(os.environ.get("FLEET_LAB_STUCK_FILE") or STUCK_FILE))

    def on(self) -> bool:
        """Whether generation is held right now."""
        return self.always or self.path.exists()


@dataclass(eq=False)
class Request:
    """One admitted request's live token counts."""

    prompt: int
    generated: int = 0
    started: float = field(default_factory=time.monotonic)
    extra: dict[str, Any] = field(default_factory=dict)  # engine-specific per-request state


class Scheduler:
    """Admission, timing and the token counters of one engine."""

    def __init__(
        self,
        slots: int,
        token_rate: float,
        prefill_rate: float,
        kv_tokens: int | None = None,
        stuck: StuckSwitch | None = None,
    ) -> None:
        self.slots = max(slots, 1)
        self.token_rate = token_rate
        self.prefill_rate = prefill_rate
        self.kv_tokens = kv_tokens
        self.stuck = stuck or StuckSwitch.from_env()
        self.free = threading.Semaphore(self.slots)
        self.lock = threading.Lock()
        self.running: list[Request] = []
        self.waiting = 0
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.finished = 0
        self.prompt_seconds = 0.0
        self.decode_seconds = 0.0
        self.dead = threading.Event()
        self.on_token: Callable[[Request], None] | None = None

    @contextmanager
    def admit(self, prompt: int) -> Iterator[Request]:
        """Wait for a free slot, then hold it for the request's lifetime."""
        with self.lock:
            self.waiting += 1
        try:
            while not self.free.acquire(timeout=POLL):
                if self.dead.is_set():
                    raise EngineDead
        finally:
            with self.lock:
                self.waiting -= 1
        request = Request(prompt)
        with self.lock:
            self.running.append(request)
        try:
            yield request
        finally:
            with self.lock:
                self.running.remove(request)
            self.free.release()

    def hold_while_stuck(self) -> float:
        """Block while the stuck switch is on; returns the seconds spent held."""
        held = time.monotonic()
        while self.stuck.on():
            if self.dead.is_set():
                raise EngineDead
            time.sleep(POLL)
        return time.monotonic() - held

    def sleep_until(self, deadline: float) -> None:
        """Sleep to a monotonic deadline, giving up when the engine dies."""
        while (left := deadline - time.monotonic()) > 0:
            if self.dead.wait(min(left, 0.05)):
                raise EngineDead
        if self.dead.is_set():
            raise EngineDead

    def prefill(self, request: Request) -> float:
        """Process the prompt; returns the seconds it took."""
        self.hold_while_stuck()
        started = time.monotonic()
        self.sleep_until(started + request.prompt / self.prefill_rate)
        took = time.monotonic() - started
        with self.lock:
            self.prompt_tokens += request.prompt
            self.prompt_seconds += took
        return took

    def decode(self, request: Request, words: list[str]) -> Iterator[str]:
        """Yield the words as the engine generates them, one token each."""
        first = time.monotonic()
        rate = self.token_rate * slowdown()
        for i, word in enumerate(words):
            first += self.hold_while_stuck()
            if i:
                self.sleep_until(first + i / rate)
            elif self.dead.is_set():
                raise EngineDead
            with self.lock:
                self.generation_tokens += 1
                request.generated += 1
                if i:
                    self.decode_seconds += 1 / rate
            if self.on_token is not None:
                self.on_token(request)
            yield word
        with self.lock:
            self.finished += 1

    def gauges(self) -> tuple[int, int]:
        """(running, waiting) requests."""
        with self.lock:
            return len(self.running), self.waiting

    def kv_usage(self) -> float:
        """The fraction of the KV cache the running requests' tokens fill."""
        with self.lock:
            used = sum(r.prompt + r.generated for r in self.running)
        if not self.kv_tokens:
            return 0.0
        return min(used / self.kv_tokens, 1.0)

    def cached_tokens(self) -> int:
        """Tokens the running requests hold in the KV cache."""
        with self.lock:
            return sum(r.prompt + r.generated for r in self.running)
