"""A host that stops answering mid-command is named while apply waits (`... 30s: waiting
on tower: no reply for 30 s`), and the command fails within its bound with a HostError
naming the host, so the step fails and apply rolls back.

The real `HostConnection.run` over a stand-in paramiko client whose channel times out as
paramiko's does, on a `FakeClock`: a silence of 900 s is checked without spending it.
The lab's SIGTERM and failpoint tests exercise the real channel.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import pytest

from fleet.errors import HostUnreachable
from reconciler.adapters.ssh import HostConnection, SshTarget
from reconciler.cli.apply import TerminalReporter
from reconciler.cli.output import Output
from tests.fakes.clock import FakeClock

FOREVER = float("inf")


@dataclass
class SilentChannel:
    """A command's channel: `script` is its stdout, chunks of bytes and silences (seconds)
    before the next; a recv that outwaits the channel timeout raises TimeoutError after
    moving the clock by that timeout, as paramiko's does in real time."""

    clock: FakeClock
    script: list[bytes | float]
    timeout: float | None = None
    closed: bool = False

    def settimeout(self, timeout: float | None) -> None:
        self.timeout = timeout

    def exec_command(self, command: str) -> None:
        pass

    def sendall(self, data: bytes) -> None:
        pass

    def shutdown_write(self) -> None:
        pass

    def recv(self, size: int) -> bytes:
        assert self.timeout is not None, "a channel without a timeout waits forever"
        while self.script:
            head = self.script[0]
            if isinstance(head, bytes):
                self.script.pop(0)
                return head
            if head > self.timeout:
                self.clock.now += self.timeout
                self.script[0] = head - self.timeout
                raise TimeoutError("timed out")
            self.clock.now += head
            self.script.pop(0)
        return b""

    def recv_stderr(self, size: int) -> bytes:
        return b""

    def recv_exit_status(self) -> int:
        return 0

    def close(self) -> None:
        self.closed = True


@dataclass
class Client:
    """What of paramiko's SSHClient `run` uses: its transport's session."""

    channel: SilentChannel
    opened: list[SilentChannel] = field(default_factory=list)

    def get_transport(self) -> Client:
        return self

    def open_session(self) -> SilentChannel:
        self.opened.append(self.channel)
        return self.channel


def tower(script: list[bytes | float]) -> tuple[HostConnection, FakeClock, io.StringIO]:
    """A connection to tower whose next command prints `script`, reporting to a
    terminal reporter (as apply's) that prints into the returned buffer."""
    clock = FakeClock()
    out = io.StringIO()
    reporter = TerminalReporter(Output(stdout=out, stderr=io.StringIO()))
    target = SshTarget("tower", "127.0.0.1", 22, "root", (), ())
    conn = HostConnection(target, clock=clock, on_silence=reporter.waiting)
    conn._client = Client(SilentChannel(clock, script))  # type: ignore[assignment]
    return conn, clock, out


def waits(out: io.StringIO) -> list[str]:
    return [line.strip() for line in out.getvalue().splitlines()]


@pytest.mark.parametrize(
    ("timeout", "gave_up_after"),
    [(None, 120), (60.0, 60), (900.0, 900)],
    ids=["default-bound", "short-call", "long-call"],
)
def test_a_host_that_stops_answering_is_named_and_the_call_fails_at_its_bound(
    timeout: float | None, gave_up_after: int
) -> None:
    conn, clock, out = tower([b"pulling\n", FOREVER])
    started = clock.now
    with pytest.raises(HostUnreachable) as raised:
        conn.run("docker compose pull", timeout=timeout)
    assert raised.value.where == "tower"
    assert str(raised.value) == (
        f"tower: no reply from tower for {gave_up_after} s (waiting on `docker`); the step gave up"
    )
    assert clock.now - started == pytest.approx(gave_up_after)
    lines = waits(out)
    assert lines[0] == "... 30s: waiting on tower: no reply for 30 s"
    assert lines[-1] == f"... {gave_up_after - 10}s: waiting on tower: no reply for " + (
        f"{gave_up_after - 10} s"
    )
    assert len(lines) == (gave_up_after - 30) // 10  # one line every 10 s after the first
    assert conn.client.opened[0].closed  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("script", "lines"),
    [
        ([b"ok\n"], []),
        ([10.0, b"ok\n"], []),
        (
            [45.0, b"ok\n"],
            [
                "... 30s: waiting on tower: no reply for 30 s",
                "... 40s: waiting on tower: no reply for 40 s",
            ],
        ),
        ([25.0, b"o", 25.0, b"k\n"], []),  # each reply starts the silence over
    ],
    ids=["prompt", "short-silence", "long-silence", "slow-but-talking"],
)
def test_a_host_that_answers_within_the_bound_is_waited_for(
    script: list[bytes | float], lines: list[str]
) -> None:
    conn, _, out = tower(script)
    assert conn.run("docker ps", timeout=120.0).stdout == "ok\n"
    assert waits(out) == lines
