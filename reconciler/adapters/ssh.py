"""One SSH connection per host (paramiko): commands, SFTP and TCP channels over it.

Used by observe and apply. Host aliases are resolved through an ssh_config file; host keys
are checked against known_hosts with paramiko's RejectPolicy, so an unknown or changed key
is an error, never a prompt. paramiko's exceptions are mapped to `HostError`s here.
Every operation is appended to `journal`, which the read-only tests inspect.
`HostConnection` implements `reconciler.host.HostSession`.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
import threading
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fleet.errors import HostAuthError, HostError, HostUnreachable
from fleet.spec.models import Host
from reconciler.clock import SYSTEM_CLOCK, Clock
from reconciler.host import CommandResult as CommandResult
from reconciler.host import checked


class _DeferredModule(types.ModuleType):
    """Stands in for a module until one of its attributes is read, then imports it."""

    def __getattr__(self, attribute: str) -> Any:
        if sys.modules.get(self.__name__) is self:
            del sys.modules[self.__name__]
        return getattr(importlib.import_module(self.__name__), attribute)


def defer_import(name: str) -> None:
    """Import module `name` when one of its attributes is first read, not on `import`.

    paramiko's config module imports invoke (and with it asyncio and unittest.mock,
    ~30 ms of every SSH command's start-up) for one use: ssh_config's `Match exec`.
    """
    if name not in sys.modules and importlib.util.find_spec(name) is not None:
        sys.modules[name] = _DeferredModule(name)


defer_import("invoke")
import paramiko  # noqa: E402  (after the deferral, which must come first)

from reconciler.adapters import sftp_files  # noqa: E402  (it imports paramiko)
from reconciler.adapters.silence import Notify, Watch, read_stdout  # noqa: E402

# What fleet reads from a host at most: a fact script's output (seats' log tails included)
# and a file (a gateway config, a compose file); more is refused, not buffered.
MAX_OUTPUT_BYTES = 256 * 1024 * 1024
MAX_FILE_BYTES = 64 * 1024 * 1024

# paramiko logs refused channels and failed handshakes itself; fleet reports them once, as
# HostErrors, so its own logger stays quiet.
logging.getLogger("paramiko").setLevel(logging.CRITICAL)


@dataclass(frozen=True)
class SshTarget:
    """Where and as whom to connect, after ssh_config resolution."""

    name: str
    hostname: str
    port: int
    user: str
    key_files: tuple[str, ...]
    known_hosts: tuple[str, ...]


def ssh_config_path() -> Path | None:
    """$FLEET_SSH_CONFIG, else ~/.ssh/config if present: the operator's environment only.

    Never a file desired/ names: paramiko runs an ssh_config's `Match exec` commands (and
    a connection would run its ProxyCommand) on this machine, and desired/ from a pull
    request nobody reviewed yet is planned as it stands (`SECURITY.md`).
    """
    chosen = os.environ.get("FLEET_SSH_CONFIG") or "~/.ssh/config"
    path = Path(chosen).expanduser()
    return path if path.is_file() else None


def resolve_target(host: Host, config_file: Path | None) -> SshTarget:
    """Apply the ssh_config entry of the host's alias (HostName, Port, User, keys)."""
    entry: dict[str, object] = {}
    if config_file is not None:
        config = paramiko.SSHConfig.from_path(str(config_file))
        entry = dict(config.lookup(host.ssh.alias or host.ssh.address or host.name))
    hostname = str(entry.get("hostname") or host.ssh.address or host.ssh.alias)
    known = entry.get("userknownhostsfile") or "~/.ssh/known_hosts"
    keys = entry.get("identityfile") or []
    return SshTarget(
        name=host.name,
        hostname=hostname,
        port=host.ssh.port or int(str(entry.get("port") or 22)),
        user=host.ssh.user or str(entry.get("user") or "root"),
        key_files=tuple(os.path.expanduser(str(k)) for k in keys),  # type: ignore[attr-defined]
        known_hosts=tuple(os.path.expanduser(p) for p in str(known).split()),
    )


@dataclass
class HostConnection:
    """An open SSH connection to one host."""

    target: SshTarget
    timeout: float = 15.0
    journal: list[tuple[str, str]] = field(default_factory=list)
    clock: Clock = SYSTEM_CLOCK
    on_silence: Notify | None = None  # told while a command's channel stays silent
    _client: paramiko.SSHClient | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def connect(self) -> HostConnection:
        """Open the connection; HostUnreachable or HostAuthError on failure."""
        client = paramiko.SSHClient()
        for path in self.target.known_hosts:
            if os.path.exists(path):
                client.load_host_keys(path)
        client.set_missing_host_key_policy(paramiko.RejectPolicy())
        try:
            client.connect(
                self.target.hostname,
                port=self.target.port,
                username=self.target.user,
                key_filename=list(self.target.key_files) or None,  # type: ignore[arg-type]
                look_for_keys=False,
                allow_agent=False,
                timeout=self.timeout,
                banner_timeout=self.timeout,
                auth_timeout=self.timeout,
            )
        except paramiko.BadHostKeyException as err:
            raise HostAuthError(
                f"host key CHANGED for {self._where()}: refusing to connect "
                "(if expected, update known_hosts)",
                where=self.target.name,
            ) from err
        except paramiko.AuthenticationException as err:
            raise HostAuthError(
                f"client key refused by {self._where()}", where=self.target.name
            ) from err
        except paramiko.SSHException as err:
            if "known_hosts" in str(err):
                raise HostAuthError(
                    f"host key of {self._where()} is not in known_hosts "
                    f"({', '.join(self.target.known_hosts)})",
                    where=self.target.name,
                ) from err
            raise HostUnreachable(
                f"SSH to {self._where()} failed: {err}", where=self.target.name
            ) from err
        except (TimeoutError, OSError) as err:
            raise HostUnreachable(
                f"cannot reach {self._where()}: {err}", where=self.target.name
            ) from err
        self._client = client
        self.journal.append(("connect", self._where()))
        return self

    @property
    def name(self) -> str:
        """The host's name in desired/."""
        return self.target.name

    def _where(self) -> str:
        return f"{self.target.user}@{self.target.hostname}:{self.target.port}"

    @property
    def client(self) -> paramiko.SSHClient:
        """The underlying paramiko client (connected)."""
        if self._client is None:
            raise HostError("not connected", where=self.target.name)
        return self._client

    def close(self) -> None:
        """Close the connection."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> HostConnection:
        return self.connect() if self._client is None else self

    def __exit__(self, *_: object) -> None:
        self.close()

    def run(
        self, command: str, *, stdin: str | None = None, timeout: float | None = None
    ) -> CommandResult:
        """Run one command; its exit status is returned, not raised."""
        self.journal.append(("exec", command))
        try:
            channel = self.client.get_transport().open_session()  # type: ignore[union-attr]
            bound = timeout or max(self.timeout, 120.0)
            channel.settimeout(bound)
            channel.exec_command(command)
            if stdin is not None:
                channel.sendall(stdin.encode())
            channel.shutdown_write()
            what = f"`{command.split()[0] if command.split() else command}`"
            watch = Watch(self.target.name, what, bound, self.clock, self.on_silence)
            stdout, stderr = _drain(channel, watch, MAX_OUTPUT_BYTES)
            if stdout is None:
                channel.close()
                raise HostError(
                    f"`{command[:60]}` printed more than {MAX_OUTPUT_BYTES} bytes",
                    where=self.target.name,
                )
            status = channel.recv_exit_status()
        except (TimeoutError, paramiko.SSHException, OSError) as err:
            raise HostUnreachable(
                f"command failed on {self.target.name}: {err}", where=self.target.name
            ) from err
        return CommandResult(
            status, stdout.decode(errors="replace"), stderr.decode(errors="replace")
        )

    def check(self, command: str, *, stdin: str | None = None, timeout: float | None = None) -> str:
        """Run a command that must succeed; HostError naming its stderr otherwise."""
        return checked(self.target.name, command, self.run(command, stdin=stdin, timeout=timeout))

    def read_file(self, path: str) -> str | None:
        """A remote file's text over SFTP; None if it does not exist."""
        self.journal.append(("sftp-read", path))
        try:
            with self.client.open_sftp() as sftp, sftp.open(path, "r") as handle:
                data = handle.read(MAX_FILE_BYTES + 1)
        except FileNotFoundError:
            return None
        except (paramiko.SSHException, OSError) as err:
            raise HostError(f"cannot read {path}: {err}", where=self.target.name) from err
        if len(data) > MAX_FILE_BYTES:
            raise HostError(f"{path} is larger than {MAX_FILE_BYTES} bytes", where=self.target.name)
        return data.decode(errors="replace")

    def write_file_atomic(
        self, path: str, text: str, mode: int | None = None, *, mode_of: str | None = None
    ) -> None:
        """Replace a file at once, secret files never readable by others on the way
        (`reconciler.adapters.sftp_files.write_atomic`); `mode` None keeps the mode of
        `mode_of` (default: `path`) where it exists, else 0644."""
        self.journal.append(("sftp-write", path))
        try:
            with self.client.open_sftp() as sftp:
                sftp_files.write_atomic(sftp, path, text.encode(), mode, mode_of=mode_of)
        except (paramiko.SSHException, OSError) as err:
            raise HostError(f"cannot write {path}: {err}", where=self.target.name) from err

    def open_tcp(self, address: str, port: int, timeout: float = 5.0) -> paramiko.Channel:
        """A TCP stream to address:port opened from the host itself (direct-tcpip)."""
        self.journal.append(("tcp", f"{address}:{port}"))
        transport = self.client.get_transport()
        assert transport is not None
        try:
            return transport.open_channel(
                "direct-tcpip", (address, port), ("127.0.0.1", 0), timeout=timeout
            )
        except (paramiko.SSHException, OSError) as err:
            # paramiko words the same refusal differently from run to run; say it one way
            raise HostUnreachable(
                f"connection to {address}:{port} refused (from {self.target.name})",
                where=self.target.name,
            ) from err


def _drain(channel: paramiko.Channel, watch: Watch, limit: int) -> tuple[bytes | None, bytes]:
    """Read stdout and stderr to their ends at once, so neither can block the other;
    stdout None when it ran past `limit` bytes (stderr past it is dropped). A silent
    channel is watched (`reconciler.adapters.silence`): HostUnreachable after its bound."""
    err = bytearray()
    done = threading.Event()

    def read_stderr() -> None:
        while not done.is_set():
            try:
                chunk = channel.recv_stderr(65536)
            except TimeoutError:  # the poll of a silent channel; stdout's reader judges it
                continue
            if not chunk:
                return
            if len(err) < limit:
                err.extend(chunk[: limit - len(err)])

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        out = read_stdout(channel, watch, limit)
    except HostUnreachable:
        done.set()
        channel.close()
        raise
    if out is None:
        done.set()
        return None, bytes(err)
    reader.join()
    return out, bytes(err)
