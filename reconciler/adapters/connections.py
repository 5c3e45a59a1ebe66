"""The SSH connections of one fleet command: at most one per host, opened on first use.

Observe and apply share them, so every command costs each host one SSH connection. The
journals of all connections record every command, SFTP operation and channel opened.
`Connections` implements `reconciler.host.Sessions`.
"""

from __future__ import annotations

import threading
from pathlib import Path

from fleet.spec.models import DesiredFleet
from reconciler.adapters.ssh import HostConnection, resolve_target, ssh_config_path


class Connections:
    """Lazily opened, cached connections to the hosts of desired/."""

    def __init__(
        self, desired: DesiredFleet, ssh_config: Path | None = None, timeout: float = 15.0
    ) -> None:
        self.desired = desired
        self.ssh_config = ssh_config or ssh_config_path(desired.settings.ssh.config_file)
        self.timeout = timeout
        self._open: dict[str, HostConnection] = {}
        self._locks: dict[str, threading.Lock] = {h: threading.Lock() for h in desired.hosts}
        self.journal: list[tuple[str, str, str]] = []

    def get(self, host: str) -> HostConnection:
        """The connection to `host`, connecting now if needed (HostError on failure)."""
        with self._locks[host]:
            conn = self._open.get(host)
            if conn is None:
                target = resolve_target(self.desired.hosts[host], self.ssh_config)
                conn = HostConnection(target, timeout=self.timeout).connect()
                self._open[host] = conn
            return conn

    def operations(self) -> list[tuple[str, str, str]]:
        """(host, kind, detail) of every operation on every connection, in order per host."""
        return [
            (name, kind, detail)
            for name, conn in sorted(self._open.items())
            for kind, detail in conn.journal
        ]

    def close(self) -> None:
        """Close every connection."""
        for conn in self._open.values():
            conn.close()
        self._open.clear()

    def __enter__(self) -> Connections:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
