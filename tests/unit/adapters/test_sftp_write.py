"""How the SSH adapter writes a file, against real SFTP servers on this machine's file
system (paramiko's in this process, which records each open; OpenSSH's sftp-server, as
sshd runs it): a secrets file is 0600 from its first byte and created exclusively under
a name no one can predict, and a file's mode is kept."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import paramiko
import pytest

from reconciler.adapters.sftp_files import write_atomic
from reconciler.adapters.ssh import HostConnection, SshTarget


class _Server(paramiko.ServerInterface):
    def get_allowed_auths(self, username: str) -> str:
        return "none"

    def check_auth_none(self, username: str) -> int:
        return paramiko.AUTH_SUCCESSFUL

    def check_channel_request(self, kind: str, chanid: int) -> int:
        return paramiko.OPEN_SUCCEEDED


class _Handle(paramiko.SFTPHandle):
    def stat(self) -> Any:
        return paramiko.SFTPAttributes.from_stat(os.fstat(self.writefile.fileno()))


class _Files(paramiko.SFTPServerInterface):
    """The local file system; every open that creates a file records its flags and the
    mode the file had at that moment."""

    created: ClassVar[list[tuple[str, int, int]]] = []

    def open(self, path: str, flags: int, attr: paramiko.SFTPAttributes) -> Any:
        mode = attr.st_mode if attr.st_mode is not None else 0o666
        fd = os.open(path, flags, mode & 0o7777)
        if flags & os.O_CREAT:
            self.created.append((path, flags, stat.S_IMODE(os.fstat(fd).st_mode)))
        handle = _Handle(flags)
        handle.writefile = handle.readfile = os.fdopen(fd, "wb" if flags & os.O_WRONLY else "rb")
        return handle

    def stat(self, path: str) -> Any:
        try:
            return paramiko.SFTPAttributes.from_stat(os.stat(path))
        except OSError as err:
            return paramiko.SFTPServer.convert_errno(err.errno)

    lstat = stat

    def chattr(self, path: str, attr: paramiko.SFTPAttributes) -> int:
        paramiko.SFTPServer.set_file_attr(path, attr)
        return paramiko.SFTP_OK

    def posix_rename(self, oldpath: str, newpath: str) -> int:
        os.rename(oldpath, newpath)
        return paramiko.SFTP_OK

    def remove(self, path: str) -> int:
        os.remove(path)
        return paramiko.SFTP_OK


@pytest.fixture
def conn() -> Iterator[HostConnection]:
    _Files.created = []
    ours, theirs = socket.socketpair()
    server = paramiko.Transport(theirs)
    server.add_server_key(paramiko.RSAKey.generate(1024))
    server.set_subsystem_handler("sftp", paramiko.SFTPServer, _Files)
    started = threading.Thread(target=server.start_server, kwargs={"server": _Server()})
    started.start()
    client = paramiko.Transport(ours)
    client.start_client(timeout=10)
    started.join()
    client.auth_none("root")
    ssh = paramiko.SSHClient()
    ssh._transport = client  # type: ignore[attr-defined]
    target = SshTarget("gpu", "127.0.0.1", 22, "root", (), ())
    connection = HostConnection(target)
    connection._client = ssh
    yield connection
    client.close()
    server.close()


def test_a_secrets_file_is_0600_from_its_first_byte(conn: HostConnection, tmp_path: Path) -> None:
    env = tmp_path / "fleet-chat.env"
    conn.write_file_atomic(str(env), 'KEY="s3cret"\n', mode=0o600)
    conn.write_file_atomic(str(env), 'KEY="s3cret-2"\n', mode=0o600)
    assert env.read_text() == 'KEY="s3cret-2"\n'
    assert stat.S_IMODE(env.stat().st_mode) == 0o600
    assert [mode for _, _, mode in _Files.created] == [0o600, 0o600], "never readable by others"
    assert all(flags & os.O_EXCL for _, flags, _ in _Files.created)
    first, second = (Path(path).name for path, _, _ in _Files.created)
    assert first != second and first.startswith(".fleet-chat.env.fleet-")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fleet-chat.env"]


def test_a_link_planted_at_the_old_temporary_name_is_not_followed(
    conn: HostConnection, tmp_path: Path
) -> None:
    victim = tmp_path / "authorized_keys"
    victim.write_text("kept\n")
    env = tmp_path / ".env"
    (tmp_path / ".env.fleet-tmp").symlink_to(victim)
    conn.write_file_atomic(str(env), "KEY=s3cret\n", mode=0o600)
    assert victim.read_text() == "kept\n"
    assert env.read_text() == "KEY=s3cret\n"


def test_a_config_keeps_its_mode_and_its_previous_copy_takes_it(
    conn: HostConnection, tmp_path: Path
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("master_key: sk-1\n")
    config.chmod(0o640)
    conn.write_file_atomic(str(config) + ".fleet-prev", config.read_text(), mode_of=str(config))
    conn.write_file_atomic(str(config), "master_key: sk-2\n")
    assert stat.S_IMODE(config.stat().st_mode) == 0o640
    assert stat.S_IMODE((tmp_path / "config.yaml.fleet-prev").stat().st_mode) == 0o640
    fresh = tmp_path / "compose.yaml"
    conn.write_file_atomic(str(fresh), "services: {}\n")
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o644


SFTP_SERVER = Path("/usr/lib/openssh/sftp-server")


class _Pipe:
    """A socket as paramiko's SFTP client takes a channel: send, recv, a name."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def send(self, data: bytes) -> int:
        return self.sock.send(data)

    def recv(self, size: int) -> bytes:
        return self.sock.recv(size)

    def get_name(self) -> str:
        return "sftp-server"

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def openssh() -> Iterator[paramiko.SFTPClient]:
    """OpenSSH's own sftp-server (what sshd runs for SFTP), spoken to over a socket pair."""
    if not SFTP_SERVER.exists():
        pytest.skip("needs OpenSSH's sftp-server")
    ours, theirs = socket.socketpair()
    server = subprocess.Popen([str(SFTP_SERVER)], stdin=theirs, stdout=theirs)
    theirs.close()
    client = paramiko.SFTPClient(_Pipe(ours))  # type: ignore[arg-type]
    yield client
    client.close()
    ours.close()
    server.wait(timeout=10)


def test_openssh_creates_the_secrets_file_with_its_mode_and_keeps_a_configs(
    openssh: paramiko.SFTPClient, tmp_path: Path
) -> None:
    env, config = tmp_path / ".env", tmp_path / "config.yaml"
    (tmp_path / ".env.fleet-tmp").symlink_to(tmp_path / "victim")
    write_atomic(openssh, str(env), b"KEY=s3cret\n", 0o600)
    config.write_text("old\n")
    config.chmod(0o640)
    write_atomic(openssh, str(config) + ".fleet-prev", b"old\n", mode_of=str(config))
    write_atomic(openssh, str(config), b"new\n")
    assert env.read_text() == "KEY=s3cret\n" and not (tmp_path / "victim").exists()
    assert {p.name: stat.S_IMODE(p.lstat().st_mode) for p in tmp_path.iterdir()} == {
        ".env": 0o600,
        ".env.fleet-tmp": 0o777,  # the planted link, untouched
        "config.yaml": 0o640,
        "config.yaml.fleet-prev": 0o640,
    }
    assert config.read_text() == "new\n"
