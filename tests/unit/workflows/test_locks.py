"""The apply lock and journal on a host (reconciler.workflows.locks), on a fake host."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
from pathlib import Path

import pytest

from fleet.errors import LockError
from fleet.spec.models import Host
from reconciler.workflows import locks
from tests.fakes.host import FakeHost
from tests.unit.render.test_compose import example

LOCK = "/srv/fleet/.fleet.lock"
JOURNAL = "/srv/fleet/.fleet-journal.jsonl"


@pytest.fixture
def tower() -> Host:
    return example().hosts["tower"]


def test_acquire_writes_the_holder_line(tower: Host) -> None:
    host = FakeHost("tower")
    locks.acquire(host, tower)
    assert locks.lock_path(tower) == LOCK
    assert re.fullmatch(
        rf"\S+@\S+ pid {os.getpid()} boot [\w-]+ `.*` since \d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n",
        host.files[LOCK],
    )
    assert "/srv/fleet" in host.directories


@pytest.mark.parametrize(
    ("held", "named"),
    [
        (None, f"@{socket.gethostname()} pid {os.getpid()} boot "),
        ("ops@laptop pid 7 `fleet apply` since 2026-12-01T09:00:00Z\n", "by ops@laptop pid 7 `"),
        ("", "by unknown holder;"),
    ],
    ids=["by-an-earlier-acquire", "by-another-machine", "empty-lock-file"],
)
def test_a_second_acquire_names_the_holder_and_the_way_out(
    tower: Host, held: str | None, named: str
) -> None:
    host = FakeHost("tower")
    if held is None:
        locks.acquire(host, tower)
    else:
        host.files[LOCK] = held
    before = host.files[LOCK]
    with pytest.raises(LockError) as caught:
        locks.acquire(host, tower)
    assert caught.value.where == "tower"
    assert caught.value.message.startswith("tower is locked by ")
    assert named in caught.value.message
    assert caught.value.message.endswith("if that apply is gone, run `fleet unlock tower --force`")
    assert host.files[LOCK] == before  # the holder's lock is left as it was


@pytest.mark.parametrize("taken", [True, False], ids=["held", "not-held"])
def test_release_removes_the_lock(tower: Host, taken: bool) -> None:
    host = FakeHost("tower")
    if taken:
        locks.acquire(host, tower)
    locks.release(host, tower)
    assert LOCK not in host.files
    locks.acquire(host, tower)  # free again
    assert LOCK in host.files


def test_record_appends_json_lines_with_step_and_target(tower: Host) -> None:
    host = FakeHost("tower", files={JOURNAL: '{"step": "finished"}\n'})
    locks.record(host, tower, "begin", summary="1 to create, 0 to replace")
    locks.record(host, tower, "create-seat", target="flash")
    lines = [json.loads(line) for line in host.files[JOURNAL].splitlines()]
    assert [(e["step"], e.get("target")) for e in lines] == [
        ("finished", None),
        ("begin", None),
        ("create-seat", "flash"),
    ]
    assert lines[1]["summary"] == "1 to create, 0 to replace"
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", e["at"]) for e in lines[1:])


def test_a_cause_with_quotes_survives_the_shell(tower: Host) -> None:
    cause = 'seat sec on tower: engine exited (can\'t allocate "2 GiB"; $HOME `x`)'
    host = FakeHost("tower")
    locks.record(host, tower, "rolled-back", cause=cause)
    assert json.loads(host.files[JOURNAL])["cause"] == cause


@pytest.mark.parametrize(
    ("held", "force", "returned", "error", "left"),
    [
        (None, False, None, None, False),
        (
            "ops@ci pid 7 `fleet apply` since 2026-12-01T00:00:00Z\n",
            False,
            None,
            "tower is locked by ops@ci pid 7 `fleet apply` since 2026-12-01T00:00:00Z; "
            "add --force to remove it",
            True,
        ),
        (
            "ops@ci pid 7 `fleet apply` since 2026-12-01T00:00:00Z\n",
            True,
            "ops@ci pid 7 `fleet apply` since 2026-12-01T00:00:00Z",
            None,
            False,
        ),
    ],
    ids=["not-locked", "held-without-force", "held-with-force"],
)
def test_unlock_removes_only_with_force(
    tower: Host, held: str | None, force: bool, returned: str | None, error: str | None, left: bool
) -> None:
    host = FakeHost("tower")
    if held is not None:
        host.files[LOCK] = held
    if error is None:
        assert locks.break_lock(host, tower, force=force) == returned
    else:
        with pytest.raises(LockError) as raised:
            locks.break_lock(host, tower, force=force)
        assert str(raised.value) == error
    assert (LOCK in host.files) is left


def test_the_journal_redacts_secrets_a_cause_quotes(tower: Host) -> None:
    host = FakeHost("tower")
    cause = "engine exited: --api-key sk-abcdefghijklmnopqrstu, store http://u:Zq8wLx3v@nas/x"
    locks.record(host, tower, "rollback", cause=cause)
    (line,) = host.files[locks.journal_path(tower)].splitlines()
    assert json.loads(line)["cause"] == "engine exited: --api-key ***, store http://u:***@nas/x"


def _dead_pid() -> int:
    gone = subprocess.Popen(["true"])
    gone.wait()
    return gone.pid


@pytest.mark.parametrize(
    "holder",
    [
        "ops@{machine} pid {dead} `fleet apply` since 2026-12-01T09:00:00Z",
        "ops@{machine} pid {alive} boot 00000000-old-boot `fleet reconcile` since 2026-12-01",
    ],
    ids=["pid-gone", "machine-booted-since"],
)
def test_a_lock_of_a_gone_apply_on_this_machine_is_taken_over(tower: Host, holder: str) -> None:
    host = FakeHost("tower")
    held = holder.format(machine=socket.gethostname(), dead=_dead_pid(), alive=os.getpid())
    host.files[LOCK] = held + "\n"
    assert locks.acquire(host, tower) == held
    assert f" pid {os.getpid()} " in host.files[LOCK]


@pytest.mark.parametrize(
    "holder",
    [
        "ops@another-machine pid {dead} `fleet apply` since 2026-12-01T09:00:00Z",
        "ops@{machine} pid {alive} `fleet apply` since 2026-12-01T09:00:00Z",
    ],
    ids=["another-machine", "live-pid"],
)
def test_a_lock_held_elsewhere_or_by_a_live_pid_still_needs_unlock(
    tower: Host, holder: str
) -> None:
    host = FakeHost("tower")
    alive = subprocess.Popen(["sleep", "30"])
    try:
        host.files[LOCK] = holder.format(
            machine=socket.gethostname(), dead=_dead_pid(), alive=alive.pid
        )
        with pytest.raises(LockError, match="run `fleet unlock tower --force`"):
            locks.acquire(host, tower)
    finally:
        alive.kill()
        alive.wait()


def test_a_lock_that_cannot_be_written_fails_with_the_hosts_error(tower: Host) -> None:
    host = FakeHost("tower", fail_on={".fleet.lock": "sh: printf: No space left on device"})
    with pytest.raises(LockError) as raised:
        locks.acquire(host, tower)
    assert raised.value.message == (
        f"cannot create the lock {LOCK} on tower: sh: printf: No space left on device"
    )
    assert LOCK not in host.files


def test_the_lock_command_in_a_real_shell_leaves_nothing_behind_on_failure(
    tmp_path: Path,
) -> None:
    lock = tmp_path / "state" / ".fleet.lock"
    command = locks.lock_command(str(lock.parent), str(lock), "me@here pid 1 `x` since now")
    first = subprocess.run(["sh", "-c", command], capture_output=True, text=True, check=False)
    assert first.returncode == 0 and lock.read_text() == "me@here pid 1 `x` since now\n"
    second = subprocess.run(["sh", "-c", command], capture_output=True, text=True, check=False)
    assert second.returncode == locks.HELD
    lock.unlink()
    (lock.parent / f"{lock.name}.{os.getpid()}.tmp").mkdir()  # the write itself fails
    third = subprocess.run(["sh", "-c", command], capture_output=True, text=True, check=False)
    assert third.returncode == 1 and "Is a directory" in third.stderr
    assert sorted(p.name for p in lock.parent.iterdir()) == [f"{lock.name}.{os.getpid()}.tmp"]
