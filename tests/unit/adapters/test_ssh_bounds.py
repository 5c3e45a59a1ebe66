"""What a host prints over SSH is read up to a bound: past it the command is a HostError,
not a process that buffers whatever a host sends."""

from __future__ import annotations

from dataclasses import dataclass

from reconciler.adapters.silence import Watch
from reconciler.adapters.ssh import _drain
from tests.fakes.clock import FakeClock

WATCH = Watch("tower", "`cat`", 120.0, FakeClock())


@dataclass
class Channel:
    """stdout and stderr of a command, handed out in chunks as paramiko's channel does."""

    out: bytes
    err: bytes = b""

    def settimeout(self, timeout: float | None) -> None:
        pass

    def recv(self, size: int) -> bytes:
        chunk, self.out = self.out[:size], self.out[size:]
        return chunk

    def recv_stderr(self, size: int) -> bytes:
        chunk, self.err = self.err[:size], self.err[size:]
        return chunk


def test_output_within_the_bound_is_read_whole() -> None:
    assert _drain(Channel(b"a" * 1000, b"e" * 10), WATCH, 1000) == (b"a" * 1000, b"e" * 10)  # type: ignore[arg-type]


def test_output_past_the_bound_is_refused_and_stderr_capped() -> None:
    out, err = _drain(Channel(b"a" * 300_000, b"e" * 5000), WATCH, 1000)  # type: ignore[arg-type]
    assert out is None and len(err) <= 1000
