"""ssh_config resolution as a user writes it, `Match exec` included, and what importing
the SSH adapter loads (invoke, which only `Match exec` needs, waits for its first use)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def run_python(code: str, *args: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        check=True,
        stdin=subprocess.DEVNULL,
    ).stdout.strip()


@pytest.mark.parametrize(
    ("config", "hostname", "port", "user"),
    [
        ("Host tower\n  HostName 10.0.0.5\n  Port 2222\n  User ops\n", "10.0.0.5", 2222, "ops"),
        ('Match exec "true"\n  HostName 10.9.9.9\n  Port 2200\n', "10.9.9.9", 2200, "root"),
        ('Match exec "false"\n  HostName 10.9.9.9\n', "tower", 22, "root"),
        (
            'Host tower\n  User ops\nMatch exec "test %h = tower"\n  Port 2201\n',
            "tower",
            2201,
            "ops",
        ),
    ],
    ids=["host-entry", "match-exec-true", "match-exec-false", "match-exec-tokens"],
)
def test_an_alias_resolves_through_ssh_config(
    tmp_path: Path, config: str, hostname: str, port: int, user: str
) -> None:
    path = tmp_path / "ssh_config"
    path.write_text(config)
    # in a process of its own, as fleet resolves it: `Match exec` runs its command through
    # invoke, which reads stdin and leaves pipes for the interpreter's exit to close
    target = run_python(
        "import sys\n"
        "from fleet.spec.models import Host, HostSsh\n"
        "from reconciler.adapters.ssh import resolve_target\n"
        "host = Host(name='tower', ssh=HostSsh(alias='tower'), address='10.0.0.5')\n"
        "t = resolve_target(host, __import__('pathlib').Path(sys.argv[1]))\n"
        "print(t.hostname, t.port, t.user)",
        str(path),
    )
    assert target == f"{hostname} {port} {user}"


def test_importing_the_ssh_adapter_leaves_invoke_for_match_exec() -> None:
    probe = (
        "import sys, reconciler.adapters.ssh\n"
        "print(sorted(m for m in ('asyncio', 'unittest.mock', 'invoke.context')"
        " if m in sys.modules))"
    )
    assert run_python(probe) == "[]"


def test_an_ssh_config_named_by_desired_is_never_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """desired/ from a pull request is planned before review: a file it names could run
    `Match exec` commands on this machine, so only the operator's environment chooses."""
    from fleet.spec.models import DesiredFleet, FleetSettings, SshSettings
    from reconciler.adapters.connections import Connections

    marker = tmp_path / "ran"
    evil = tmp_path / "evil_config"
    evil.write_text(f'Match exec "touch {marker}"\n  Port 2222\n')
    settings = FleetSettings(ssh=SshSettings(config_file=str(evil)))
    monkeypatch.delenv("FLEET_SSH_CONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.ssh/config either
    assert Connections(DesiredFleet(settings=settings)).ssh_config is None
    own = tmp_path / "operator_config"
    own.write_text("Host tower\n  Port 2201\n")
    monkeypatch.setenv("FLEET_SSH_CONFIG", str(own))
    assert Connections(DesiredFleet(settings=settings)).ssh_config == own
    assert not marker.exists()
