"""The host seam: what apply, locks, drain and observe need from a host, as protocols.

`HostSession` is one open session to one host: run a command, read a file, write one
atomically, open a TCP stream from the host itself. `reconciler.adapters.ssh.HostConnection`
implements it over SSH; the unit tests implement it in memory (`tests.fakes.host`), so the
workflows run without a network. `Sessions` hands out one session per host by name
(`reconciler.adapters.connections.Connections`, or the fake). `Channel` is the byte stream
`open_tcp` returns, as far as `reconciler.adapters.http` uses it.

This module sits beside the layers (workflows and adapters both import it) and imports
only the standard library and `fleet`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from fleet.errors import HostError


@dataclass(frozen=True)
class CommandResult:
    """What a remote command printed and how it exited."""

    exit_status: int
    stdout: str
    stderr: str


class Channel(Protocol):
    """A TCP stream opened from a host (an SSH direct-tcpip channel, or a fake)."""

    def settimeout(self, timeout: float | None, /) -> None: ...

    def sendall(self, data: bytes, /) -> None: ...

    def recv(self, size: int, /) -> bytes: ...

    def close(self) -> None: ...


class HostSession(Protocol):
    """What apply, locks, drain and observe need from a host.

    `journal` records every operation as (kind, detail): `exec` with the command,
    `sftp-read` and `sftp-write` with the path, `tcp` with address:port, and `http`
    (appended by `reconciler.adapters.http`) with the request line.
    """

    journal: list[tuple[str, str]]

    @property
    def name(self) -> str:
        """The host's name in desired/."""
        ...

    def run(
        self, command: str, *, stdin: str | None = None, timeout: float | None = None
    ) -> CommandResult:
        """Run one shell command; its exit status is returned, not raised."""
        ...

    def check(self, command: str, *, stdin: str | None = None, timeout: float | None = None) -> str:
        """Run a command that must succeed: its stdout, or `HostError` (see `checked`)."""
        ...

    def read_file(self, path: str) -> str | None:
        """A file's text; None if it does not exist."""
        ...

    def write_file_atomic(
        self, path: str, text: str, mode: int | None = None, *, mode_of: str | None = None
    ) -> None:
        """Replace a file at once (readers see the old text or the new, never a part),
        never readable beyond `mode` on the way. `mode` None keeps the mode of `mode_of`
        (default: `path` itself) where it exists, else 0644."""
        ...

    def open_tcp(self, address: str, port: int, timeout: float = 5.0) -> Channel:
        """A TCP stream to address:port, opened from the host itself."""
        ...


class Sessions(Protocol):
    """One session per host, by the host's name in desired/."""

    def get(self, host: str) -> HostSession:
        """The session to `host` (opened on first use; HostError if it cannot be)."""
        ...


def checked(host: str, command: str, result: CommandResult) -> str:
    """A command's stdout if it exited 0, else HostError naming its last line of output."""
    if result.exit_status != 0:
        reason = (result.stderr.strip() or result.stdout.strip()).splitlines()
        raise HostError(
            f"`{command.split()[0]}` exited {result.exit_status}: "
            f"{reason[-1] if reason else 'no output'}",
            where=host,
        )
    return result.stdout
