"""The engines' /metrics read inside the host's fact script (`fleet status`): the real
shell runs the fact's command against a real HTTP server on loopback, with curl and, as on
a minimal systemd host, with python3 alone; each port's text is bounded, a port where
nothing listens prints nothing, and only status asks for it (plan and inventory do not)."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from fleet.facts.script import FactOutput, script
from fleet.facts.seat_metrics import METRICS_BYTES, SEAT_METRICS
from tests.unit.cli.fake_fleet import MASTER_KEY, make_fleet

BODY = b'vllm:num_requests_running{model_name="x"} 2.0\n' * 50_000  # ~2.3 MB: over the bound


@pytest.fixture
def engine() -> Iterator[int]:
    class Metrics(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/metrics" else 404)
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Metrics)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def free_port() -> int:
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = int(server.server_address[1])
    server.server_close()
    return port


def only(tmp_path: Path, *programs: str) -> str:
    """A PATH with just these programs (and what sh needs to run the script)."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    for name in programs:
        found = shutil.which(name, path="/usr/bin:/bin")  # the system's, as on a host
        assert found is not None, f"{name} is not installed here"
        (folder / name).symlink_to(found)
    return str(folder)


@pytest.mark.parametrize("fetcher", ["curl", "python3"], ids=["curl", "python3-only"])
def test_each_port_is_read_bounded_and_a_dead_port_prints_nothing(
    tmp_path: Path, engine: int, fetcher: str
) -> None:
    dead = free_port()
    text = script([SEAT_METRICS.entry("127.0.0.1", [engine, dead])], "B0UNDARY")
    path = only(tmp_path, "curl", "head") if fetcher == "curl" else only(tmp_path, "python3")
    done = subprocess.run(
        ["/bin/sh", "-s"],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PATH": path},
        check=False,
    )
    facts = FactOutput(done.stdout, "B0UNDARY")
    assert facts.finished, done.stderr
    found = facts[SEAT_METRICS]
    assert set(found) == {engine}  # nothing listens on the other port
    assert len(found[engine]) == METRICS_BYTES  # cut at the bound
    assert found[engine].startswith('vllm:num_requests_running{model_name="x"} 2.0\n')


def test_only_status_reads_the_engines_metrics(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in MASTER_KEY.items():
        monkeypatch.setenv(name, value)
    fake = make_fleet(tmp_path)
    fake.deploy("tower")
    for command in (("plan",), ("inventory",), ("status",)):
        fake.fleet(*command)
        asked = "/metrics" in fake.hosts["tower"].scripts[-1]
        assert asked == (command == ("status",)), command
