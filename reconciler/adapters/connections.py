"""The SSH connections of one fleet command: at most one per host, opened on first use.

Observe and apply share them, so every command costs each host one SSH connection. The
journals of all connections record every command, SFTP operation and channel opened.
`Connections` implements `reconciler.host.Sessions`, for the hosts of desired/ and the
ssh_config hosts gateway clients' keys are delivered to. `open_all` starts the connections
in the background, so that a command's own start-up (the planner's imports) overlaps
the SSH handshakes instead of coming before them. `on_silence`, when set (apply sets its
reporter's `waiting`), is told while a host leaves a command without reply.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path

from fleet.spec.clients import ClientDelivery
from fleet.spec.models import DesiredFleet, Host, HostSsh
from reconciler.adapters.silence import Notify
from reconciler.adapters.ssh import HostConnection, resolve_target, ssh_config_path


def client_hosts(desired: DesiredFleet) -> dict[str, Host]:
    """The hosts gateway clients' keys are delivered to that are not hosts of desired/:
    Host entries of the operator's ssh_config, reached by that name."""
    clients = desired.gateway.clients if desired.gateway else {}
    names = {
        c.delivery.host
        for c in clients.values()
        if isinstance(c.delivery, ClientDelivery) and c.delivery.host not in desired.hosts
    }
    return {n: Host(name=n, ssh=HostSsh(alias=n), address=n) for n in sorted(names)}


class Connections:
    """Lazily opened, cached connections to the hosts of desired/."""

    def __init__(
        self, desired: DesiredFleet, ssh_config: Path | None = None, timeout: float = 15.0
    ) -> None:
        self.desired = desired
        self.ssh_config = ssh_config or ssh_config_path()
        self.timeout = timeout
        self._open: dict[str, HostConnection] = {}
        self._extra = client_hosts(desired)
        names = [*desired.hosts, *self._extra]
        self._locks: dict[str, threading.Lock] = {h: threading.Lock() for h in names}
        self._closed = False
        self._failed: dict[str, Exception] = {}
        self._tried: set[str] = set()
        self.journal: list[tuple[str, str, str]] = []
        self.on_silence: Notify | None = None

    def open_all(self, hosts: Iterable[str] | None = None) -> None:
        """Start connecting to every host (or those named) in the background.

        A failure is kept and raised by the next `get` of that host, as `get` would
        have raised it; a later `get` tries again. `close` does not wait for them: a
        connection that opens after it is closed at once.
        """
        self._closed = False
        for host in sorted(self.desired.hosts if hosts is None else hosts):
            threading.Thread(target=self._open_one, args=(host,), daemon=True).start()

    def _open_one(self, host: str) -> None:
        with self._locks[host]:
            if host in self._tried:  # a get() came first: it connected or raised
                return
            try:
                conn = self._connected(host)
            except Exception as err:  # raised by the next get(host), as get would have
                self._failed[host] = err
                return
            if self._closed:  # close() ran while this connected
                self._open.pop(host, None)
                conn.close()

    def get(self, host: str) -> HostConnection:
        """The connection to `host`, connecting now if needed (HostError on failure)."""
        with self._locks[host]:
            failed = self._failed.pop(host, None)
            if failed is not None:
                raise failed
            return self._connected(host)

    def _connected(self, host: str) -> HostConnection:
        self._tried.add(host)
        conn = self._open.get(host)
        if conn is None:
            spec = self.desired.hosts.get(host) or self._extra[host]
            target = resolve_target(spec, self.ssh_config)
            conn = HostConnection(target, timeout=self.timeout).connect()
            conn.on_silence = self._silent
            self._open[host] = conn
        return conn

    def _silent(self, reason: str, seconds: float) -> None:
        if self.on_silence is not None:
            self.on_silence(reason, seconds)

    def operations(self) -> list[tuple[str, str, str]]:
        """(host, kind, detail) of every operation on every connection, in order per host."""
        return [
            (name, kind, detail)
            for name, conn in sorted(self._open.items())
            for kind, detail in conn.journal
        ]

    def close(self) -> None:
        """Close every connection (one still opening in the background closes when open)."""
        self._closed = True
        for conn in list(self._open.values()):
            conn.close()
        self._open.clear()
        self._failed.clear()

    def __enter__(self) -> Connections:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
