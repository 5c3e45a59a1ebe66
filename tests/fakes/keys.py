"""A client's host in memory: its requests to the gateway's front pass the key check fleet
ships (`reconciler/shipped/fleet_auth.py`, its `decide`) against the gateway host's key
file, then reach the proxy the front serves, as through the real front and LiteLLM.

`FakeClientHost(name, gateway_host, front, key_file, master)`; `checks_keys = False` makes
the gateway answer as a proxy without the key check would (every key passes);
`guard_front` puts the gateway host's own requests to its front through the check.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType
from typing import Any

from fleet.facts.client_keys import hash_key
from tests.fakes.channel import FakeChannel, Reply
from tests.fakes.host import FakeHost

SHIPPED = Path(__file__).resolve().parents[2] / "reconciler" / "shipped" / "fleet_auth.py"


def shipped_auth() -> ModuleType:
    """The shipped key check, loaded as LiteLLM loads it: from its file."""
    spec = importlib.util.spec_from_file_location("fleet_auth_fake", SHIPPED)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


AUTH = shipped_auth()


class _Table:
    def __init__(self, text: str | None) -> None:
        try:
            self.table = AUTH.parse(text) if text is not None else {}
        except ValueError:
            self.table = {}

    def lookup(self, key: str) -> dict[str, Any] | None:
        found: dict[str, Any] | None = self.table.get(hash_key(key))
        return found


class FakeClientHost(FakeHost):
    """A host with a client of the gateway on it."""

    def __init__(
        self, name: str, gateway: FakeHost, front: tuple[str, int], key_file: str, master: str
    ) -> None:
        super().__init__(name, gpus=0)
        self.gateway, self.front, self.key_file, self.master = gateway, front, key_file, master
        self.checks_keys = True
        self.answers: list[int] = []  # every status the front answered this host

    def open_tcp(self, address: str, port: int, timeout: float = 5.0) -> FakeChannel:
        if (address, port) != self.front:
            return super().open_tcp(address, port, timeout)
        self.journal.append(("tcp", f"{address}:{port}"))
        return _KeyChannel(routes={}, host=self)


def guard_front(gateway: FakeHost, client: FakeClientHost) -> None:
    """The gateway host's own requests to its front pass the key check too (as the real
    front's do): checked as `client`'s are, recorded in its `answers`."""
    original = gateway.open_tcp

    def open_tcp(address: str, port: int, timeout: float = 5.0) -> FakeChannel:
        if (address, port) != client.front:
            return original(address, port, timeout)
        return _KeyChannel(routes={}, host=client)

    gateway.open_tcp = open_tcp  # type: ignore[method-assign]


class _KeyChannel(FakeChannel):
    def __init__(self, routes: dict[str, list[Reply]], host: FakeClientHost) -> None:
        super().__init__(routes)
        self.host = host

    def sendall(self, data: bytes, /) -> None:
        self.sent += data
        head, _, body = bytes(self.sent).partition(b"\r\n\r\n")
        if not _ or self._reply:
            return
        lines = head.decode().split("\r\n")
        path = lines[0].split(" ")[1]
        headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
        model = json.loads(body).get("model") if body else None
        host = self.host
        refused = None
        if host.checks_keys:
            table = _Table(host.gateway.files.get(host.key_file))
            try:
                AUTH.decide(table, headers.get("Authorization"), host.master, path, model)
            except AUTH.Refused as err:
                refused = Reply(err.status, json.dumps({"error": {"message": err.message}}))
        if refused is None:
            inner = FakeHost.open_tcp(host.gateway, *host.front)
            inner.sendall(bytes(self.sent))
            self._reply = inner.recv(1 << 20)
            host.answers.append(int(self._reply.split(b" ", 2)[1]))
            return
        host.answers.append(refused.status)
        self.routes = {path: [refused]}
        super().sendall(b"")
