"""`systemctl show` and `journalctl -u` of units on the lab's systemd hosts, as recorded
(tests/corpus/systemd, SOURCES.md): the facts the systemd runtime reads of a seat's unit."""

from __future__ import annotations

import pytest

from fleet.engines import llamacpp
from fleet.facts.systemctl import UnitStatus, exec_start_text, parse_show_blocks, unit_status
from fleet.facts.unit_journal import parse_unit_journal
from fleet.runtimes.systemd_unit import exec_argv, read_spec_hash
from tests.conftest import CORPUS
from tests.unit.runtimes.test_systemd_unit import seat

SYSTEMD = CORPUS / "systemd"


def parse_systemctl_show(text: str) -> dict[str, UnitStatus]:
    """Unit name -> status, for every block of a `systemctl show` output (as the systemd
    runtime reads each block)."""
    statuses = (unit_status(block) for block in parse_show_blocks(text))
    return {status.unit: status for status in statuses if status.unit}


SHOW = [
    # file, unit, active, sub, main pid, restarts, need reload, fragment
    ("show-full-running.txt", "rec-demo.service", "active", "running", 38, 0, False, True),
    ("show-after-kill9-restarted.txt", "rec-demo.service", "active", "running", 48, 1, False, True),
    (
        "show-edited-need-daemon-reload.txt",
        "rec-edit.service",
        "active",
        "running",
        89,
        0,
        True,
        True,
    ),
    (
        "show-failing-auto-restart.txt",
        "rec-fail.service",
        "activating",
        "auto-restart",
        None,
        0,
        False,
        True,
    ),
    ("show-not-found.txt", "fleet-nothing.service", "inactive", "dead", None, 0, False, False),
]


@pytest.mark.parametrize(
    ("name", "unit", "active", "sub", "pid", "restarts", "reload", "has_file"),
    SHOW,
    ids=[row[0].removesuffix(".txt") for row in SHOW],
)
def test_show_reads_state_pid_restarts_and_reload(
    name: str,
    unit: str,
    active: str,
    sub: str,
    pid: int | None,
    restarts: int,
    reload: bool,
    has_file: bool,
) -> None:
    status = parse_systemctl_show((SYSTEMD / name).read_text())[unit]
    assert (status.active_state, status.sub_state, status.main_pid) == (active, sub, pid)
    assert (status.restarts, status.need_daemon_reload, status.exists) == (
        restarts,
        reload,
        has_file,
    )
    assert status.fragment_path == (f"/etc/systemd/system/{unit}" if has_file else None)
    assert status.running == (pid is not None)


def test_show_reads_exec_start_environment_and_start_time() -> None:
    status = parse_systemctl_show((SYSTEMD / "show-after-kill9-restarted.txt").read_text())[
        "rec-demo.service"
    ]
    assert status.exec_path == "/usr/bin/python3"
    assert status.exec_start is not None
    assert status.exec_start.endswith(' two words {"method": "mtp", "k": 3} 100% $$HOME')
    assert status.environment == '"PLAIN=a b % c" CUDA_VISIBLE_DEVICES='
    assert status.environment_files == ("/etc/fleet/rec.env",)
    assert status.active_since == "Thu 2026-12-03 18:00:04 UTC"
    assert status.invocation_id == "12c1ce042a0c41b9a9be8f809d992bc2"


def test_show_of_two_units_gives_both() -> None:
    text = (SYSTEMD / "show-two-units-stopped-and-running.txt").read_text()
    statuses = parse_systemctl_show(text)
    assert sorted(statuses) == ["rec-demo.service", "rec-edit.service"]
    assert statuses["rec-edit.service"].active_state == "inactive"
    assert statuses["rec-edit.service"].main_pid is None
    assert statuses["rec-demo.service"].main_pid == 48


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (["/usr/bin/llama-server", "--port", "8080"], "/usr/bin/llama-server --port 8080"),
        (["/bin/x", "two words", "$HOME"], "/bin/x two words $$HOME"),
        (["/bin/x", "100%"], "/bin/x 100%"),
    ],
    ids=["plain", "space-and-dollar", "percent"],
)
def test_exec_start_text_is_what_show_prints(argv: list[str], shown: str) -> None:
    assert exec_start_text(argv) == shown


@pytest.mark.parametrize(
    "text",
    ["", "garbage\n===\n", "ExecStart={ broken\nMainPID=abc\nNRestarts=-1\n", "=\n\n\n"],
    ids=["empty", "garbage", "broken-values", "bare-equals"],
)
def test_show_never_raises(text: str) -> None:
    for status in parse_systemctl_show(text).values():
        assert status.main_pid is None and status.restarts == 0


JOURNAL = [
    # file, unit, started at, lines since, exits, restarts logged
    (
        "journal-restarted-after-kill9.txt",
        "rec-demo.service",
        "2026-12-03T18:00:04+0000",
        (
            "argv ['-c', 'two words', '{\"method\": \"mtp\", \"k\": 3}', '100%', '$HOME']",
            'env tok$en "q" x a b % c',
        ),
        ("code=killed, status=9/KILL",),
        1,
    ),
    (
        "journal-failing-start.txt",
        "rec-fail.service",
        "2026-12-03T18:00:33+0000",
        ("loading", "error: failed to open GGUF file"),
        ("code=exited, status=1/FAILURE",) * 3,
        2,
    ),
]


@pytest.mark.parametrize(
    ("name", "unit", "started", "lines", "exits", "restarts"),
    JOURNAL,
    ids=[row[0].removesuffix(".txt") for row in JOURNAL],
)
def test_journal_gives_the_output_since_the_last_start(
    name: str,
    unit: str,
    started: str,
    lines: tuple[str, ...],
    exits: tuple[str, ...],
    restarts: int,
) -> None:
    run = parse_unit_journal((SYSTEMD / name).read_text(), unit)
    assert run.started_at == started
    assert run.lines == lines
    assert run.exits == exits
    assert run.restarts_logged == restarts


def test_journal_of_another_unit_or_nothing_has_no_start() -> None:
    text = (SYSTEMD / "journal-failing-start.txt").read_text()
    assert parse_unit_journal(text, "fleet-other.service").started_at is None
    assert parse_unit_journal("-- No entries --\n", "x.service").lines == ()


def test_a_seat_unit_recorded_running_reads_back_as_rendered() -> None:
    unit_text = (SYSTEMD / "fleet-coder.service").read_text()
    status = parse_systemctl_show((SYSTEMD / "show-fleet-coder-llama-server-gpu.txt").read_text())[
        "fleet-coder.service"
    ]
    # recorded before fleet rendered the verbosity b11434 needs for its facts (`-lv 4`)
    assert f"{status.exec_start} -lv 4" == exec_start_text(exec_argv(seat()))
    assert status.environment == "CUDA_VISIBLE_DEVICES=0"
    assert read_spec_hash(unit_text) is not None
    run = parse_unit_journal(
        (SYSTEMD / "journal-fleet-coder-llama-server-gpu.txt").read_text(), "fleet-coder.service"
    )
    report = llamacpp.read_log(run.text)
    assert (report.kv_cache_tokens, report.max_model_len, report.max_concurrency) == (
        16384,
        8192,
        2,
    )
