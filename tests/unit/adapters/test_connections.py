"""Connections opened in the background (`open_all`): one SSH connection per host whoever
asks first, a failure reported by the next `get` as `get` would report it, and nothing
left open by a `close` that comes while a host is still connecting. `HostConnection` (our
SSH seam) is replaced by a recording stand-in; the real one is exercised by the lab."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from fleet.errors import HostUnreachable
from reconciler.adapters import connections as module
from reconciler.adapters.connections import Connections
from reconciler.adapters.ssh import SshTarget
from tests.unit.render.test_compose import example


class Recorder:
    """What the stand-in connections did, and how each host answers."""

    def __init__(self) -> None:
        self.connects: list[str] = []
        self.closed: list[str] = []
        self.down: set[str] = set()
        self.held: dict[str, threading.Event] = {}
        self.connecting: dict[str, threading.Event] = {}
        self.any_closed = threading.Event()


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    record = Recorder()

    class StandIn:
        def __init__(self, target: SshTarget, timeout: float) -> None:
            self.name = target.name

        def connect(self) -> StandIn:
            record.connects.append(self.name)
            record.connecting.setdefault(self.name, threading.Event()).set()
            if self.name in record.held:
                record.held[self.name].wait(5)
            if self.name in record.down:
                raise HostUnreachable("connection refused", where=self.name)
            return self

        def close(self) -> None:
            record.closed.append(self.name)
            record.any_closed.set()

    monkeypatch.setattr(module, "HostConnection", StandIn)
    return record


def connections(tmp_path: Path) -> Connections:
    config = tmp_path / "ssh_config"
    config.write_text("")
    return Connections(example(), config)


def test_a_host_opened_in_the_background_is_connected_once(
    tmp_path: Path, recorder: Recorder
) -> None:
    sessions = connections(tmp_path)
    sessions.open_all()
    hosts = sorted(example().hosts)
    first = {h: sessions.get(h) for h in hosts}
    assert {h: sessions.get(h) for h in hosts} == first
    assert sorted(recorder.connects) == hosts


def test_a_background_failure_is_raised_by_the_next_get_then_retried(
    tmp_path: Path, recorder: Recorder
) -> None:
    recorder.down = {"rig"}
    sessions = connections(tmp_path)
    sessions.open_all(["rig"])
    with pytest.raises(HostUnreachable, match="connection refused"):
        sessions.get("rig")
    assert recorder.connects == ["rig"]
    recorder.down = set()
    assert sessions.get("rig") is sessions.get("rig")
    assert recorder.connects == ["rig", "rig"]


def test_a_get_before_the_background_open_leaves_it_nothing_to_do(
    tmp_path: Path, recorder: Recorder
) -> None:
    sessions = connections(tmp_path)
    conn = sessions.get("tower")
    sessions.open_all(["tower"])
    sessions.close()
    assert recorder.connects == ["tower"]
    assert recorder.closed == ["tower"]
    assert conn is not None


def test_a_connection_that_opens_after_close_is_closed_at_once(
    tmp_path: Path, recorder: Recorder
) -> None:
    recorder.held["tower"] = threading.Event()
    sessions = connections(tmp_path)
    sessions.open_all(["tower"])
    assert recorder.connecting.setdefault("tower", threading.Event()).wait(5)
    sessions.close()  # does not wait for the handshake
    assert recorder.closed == []
    recorder.held["tower"].set()
    assert recorder.any_closed.wait(5)
    assert recorder.closed == ["tower"]
    assert sessions.operations() == []


def test_a_client_host_of_the_ssh_config_is_reached_by_its_name(
    tmp_path: Path, recorder: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gateway client's key goes to a host only the operator's ssh_config names: it is
    connected as that Host (its HostName and Port), as a host of desired/ would be."""
    from fleet.spec.clients import GatewayClient

    targets: list[SshTarget] = []
    resolve = module.resolve_target
    monkeypatch.setattr(
        module, "resolve_target", lambda h, c: targets.append(resolve(h, c)) or targets[-1]
    )
    fleet = example()
    assert fleet.gateway is not None
    client = GatewayClient.model_validate({"aliases": "all", "delivery": {"host": "agent-box"}})
    gateway = fleet.gateway.model_copy(update={"clients": {"agent": client}})
    config = tmp_path / "ssh_config"
    config.write_text("Host agent-box\n  HostName 127.0.0.99\n  Port 2299\n")
    sessions = Connections(fleet.model_copy(update={"gateway": gateway}), config)
    sessions.get("agent-box")
    assert recorder.connects == ["agent-box"]
    assert (targets[0].hostname, targets[0].port) == ("127.0.0.99", 2299)
