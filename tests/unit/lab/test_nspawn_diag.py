"""When a systemd host of the lab does not come up, the lab's error names the failing unit
and its status lines, as the host told them (recorded in tests/corpus/systemd/boot-*: a
boot whose sshd could not bind host0's address), not only "timed out"."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lab.nspawn_diag import HostAnswers, explain, failed_units

RECORDED = Path(__file__).resolve().parents[2] / "corpus" / "systemd"


def recorded(part: str) -> str:
    """One recorded output of the boot whose ssh.service failed."""
    return (RECORDED / f"boot-ssh-bind-failed-{part}").read_text()


def answers(status: str = "status.txt", errors: str = "errors.txt") -> HostAnswers:
    """What the failed host answered (`errors` '' : not asked)."""
    return HostAnswers(
        state=recorded("state.txt"),
        failed=recorded("failed.txt"),
        status=recorded(status),
        errors=recorded(errors) if errors else "",
    )


@pytest.mark.parametrize(
    ("given", "console", "first_line", "lines"),
    [
        (
            answers(),
            "",
            "failed: ssh.service (system degraded)",
            [
                "× ssh.service - OpenBSD Secure Shell server",
                "Active: failed (Result: exit-code)",
                "ExecStart=/usr/sbin/sshd -D $SSHD_OPTS (code=exited, status=255/EXCEPTION)",
                "error: Bind to port 2222 on 198.18.197.2 failed: Cannot assign requested address.",
                "sshd[34]: fatal: Cannot bind any address.",
            ],
        ),
        (
            answers(status="status-untied.txt", errors=""),
            "",
            "failed: ssh.service (system degraded)",
            ["Active: failed (Result: exit-code)", "Failed to start ssh.service"],
        ),
        (
            None,
            recorded("console.log"),
            "console: ssh.service failed to start",
            [],
        ),
        (
            None,
            recorded("console.log").split("[FAILED]")[0],  # the boot up to then
            "console: no unit failed to start; its last lines",
            ["Starting ssh.service - OpenBSD Secure Shell server...", "Started dbus.service"],
        ),
    ],
    ids=["host-answers", "journal-untied-to-unit", "host-gone-console", "console-no-failure"],
)
def test_the_error_names_the_failing_unit_and_its_status_lines(
    given: HostAnswers | None, console: str, first_line: str, lines: list[str]
) -> None:
    said = explain(given, console)
    assert said.splitlines()[0] == first_line
    for line in lines:
        assert line in said
    assert "\r" not in said


def test_a_line_both_in_the_status_and_in_the_errors_is_said_once() -> None:
    assert explain(answers(), "").count("fatal: Cannot bind any address.") == 1


@pytest.mark.parametrize(
    "part", ["failed.txt", "failed-legend.txt"], ids=["plain", "with-bullets-and-legend"]
)
def test_failed_units_are_read_from_either_listing(part: str) -> None:
    assert failed_units(recorded(part)) == ["ssh.service"]
