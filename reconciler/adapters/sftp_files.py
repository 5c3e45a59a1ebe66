"""Replace a file on a host over SFTP so that no one can read a secret on the way.

Used by `reconciler.adapters.ssh.HostConnection.write_file_atomic`: the compose `.env`
and a systemd seat's `/etc/fleet/fleet-<seat>.env` (0600), the gateway config (whose
mode, often 0600 for its provider keys, and owner are kept), every file apply writes.
The new text goes to a temporary file in the same directory, whose name no one can
predict, created exclusively (never through a file or link someone put there first) with
its final mode in the open request itself, then renamed over the path.
"""

from __future__ import annotations

import contextlib
import secrets

import paramiko
from paramiko import sftp as protocol

DEFAULT_MODE = 0o644


def write_atomic(
    sftp: paramiko.SFTPClient,
    path: str,
    data: bytes,
    mode: int | None = None,
    *,
    mode_of: str | None = None,
) -> None:
    """Write `data` to `path` at once with `mode` (None: that of `mode_of`, default
    `path`, where it exists, and its owner too; else 0644). OSError on failure."""
    kept = _stat(sftp, mode_of or path) if mode is None else None
    final = mode if mode is not None else _mode_of(kept)
    directory, _, base = path.rpartition("/")
    temporary = f"{directory}/.{base}.fleet-{secrets.token_hex(8)}"
    try:
        with _create_exclusive(sftp, temporary, final) as handle:
            handle.write(data)
        sftp.chmod(temporary, final)  # the host's umask may have narrowed it at creation
        if kept is not None:
            _keep_owner(sftp, temporary, kept)
        sftp.posix_rename(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            sftp.remove(temporary)
        raise


def _mode_of(kept: paramiko.SFTPAttributes | None) -> int:
    if kept is None or kept.st_mode is None:
        return DEFAULT_MODE
    return kept.st_mode & 0o7777


def _stat(sftp: paramiko.SFTPClient, path: str) -> paramiko.SFTPAttributes | None:
    try:
        return sftp.stat(path)
    except FileNotFoundError:
        return None


def _create_exclusive(sftp: paramiko.SFTPClient, path: str, mode: int) -> paramiko.SFTPFile:
    """Open a new file for writing: SFTP's CREATE|EXCL, its permissions in the open
    request (paramiko's `open` sends none: the file would start at 0666 & umask)."""
    attributes = paramiko.SFTPAttributes()
    attributes.st_mode = mode
    flags = protocol.SFTP_FLAG_WRITE | protocol.SFTP_FLAG_CREATE | protocol.SFTP_FLAG_EXCL
    kind, message = sftp._request(protocol.CMD_OPEN, path, flags, attributes)  # type: ignore[attr-defined]
    if kind != protocol.CMD_HANDLE:
        raise paramiko.SFTPError("Expected handle")
    return paramiko.SFTPFile(sftp, message.get_binary(), "wb")


def _keep_owner(sftp: paramiko.SFTPClient, path: str, kept: paramiko.SFTPAttributes) -> None:
    """The old file's owner on the new one (a proxy running as its own user keeps
    reading its config); a login that may not chown leaves the file its own."""
    if kept.st_uid is None or kept.st_gid is None:
        return
    new = sftp.stat(path)
    if (new.st_uid, new.st_gid) != (kept.st_uid, kept.st_gid):
        with contextlib.suppress(OSError):
            sftp.chown(path, kept.st_uid, kept.st_gid)
