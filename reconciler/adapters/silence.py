"""Reading a remote command's output while saying what it waits for.

A host that stops answering mid-step (frozen, cut off, its sshd hung) leaves a command's
channel silent. `read_stdout` reads the channel in short polls (the channel timeout is at
most `Patience.every`), measures the silence on a `Clock`, and after `Patience.silence`
seconds names the host while it waits (`waiting on tower: no reply for 30 s`, again every
`every` seconds, through the hook apply points at the reporter of its `... 10s:` lines).
Once the call's own bound has passed without a byte it fails with `HostUnreachable`
naming the host and the command, so the step fails and apply rolls back.

The clock is real for the command line; tests hand a `tests.fakes.clock.FakeClock` and a
channel whose timeouts move it, so a silence of 900 s is checked without spending it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from fleet.errors import HostUnreachable
from reconciler.clock import Clock

Notify = Callable[[str, float], None]  # (reason, seconds silent): a reporter's `waiting`


@dataclass(frozen=True)
class Patience:
    """When a silent host is named (`silence`, then every `every` seconds)."""

    silence: float = 30.0
    every: float = 10.0


class Readable(Protocol):
    """What of a paramiko channel the reader uses."""

    def settimeout(self, timeout: float | None, /) -> None: ...

    def recv(self, size: int, /) -> bytes: ...


@dataclass(frozen=True)
class Watch:
    """Whose silence this is, how long it may last, and whom to tell."""

    host: str
    what: str  # the command's first word, in backquotes
    bound: float
    clock: Clock
    notify: Notify | None = None
    patience: Patience = Patience()


def read_stdout(channel: Readable, watch: Watch, limit: int) -> bytes | None:
    """The channel's output to its end; None past `limit` bytes; HostUnreachable once
    the channel stayed silent for `watch.bound` seconds."""
    patience = watch.patience
    channel.settimeout(max(min(patience.every, watch.bound), 0.01))
    out = bytearray()
    last = watch.clock.monotonic()
    told = 0.0
    while True:
        try:
            chunk = channel.recv(65536)
        except TimeoutError:
            silent = watch.clock.monotonic() - last
            if silent >= watch.bound:
                raise HostUnreachable(
                    f"no reply from {watch.host} for {silent:.0f} s (waiting on "
                    f"{watch.what}); the step gave up",
                    where=watch.host,
                ) from None
            if watch.notify is not None and silent >= max(patience.silence, told + patience.every):
                watch.notify(f"waiting on {watch.host}: no reply for {silent:.0f} s", silent)
                told = silent
            continue
        if not chunk:
            return bytes(out)
        out.extend(chunk)
        if len(out) > limit:
            return None
        last, told = watch.clock.monotonic(), 0.0
