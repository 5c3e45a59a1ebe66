"""Why a systemd host did not come up: the lab's error when a host's sshd never answers.

`tests.lab.nspawn.finish` calls `why_down(name, init_pid, console_log)` when the host's
sshd did not answer in time. It asks the host itself, through `nsenter` into the
namespaces of the container's pid 1 (SSH is what failed): the system state, the failed
units, `systemctl status` of each (of ssh.service when none failed: the boot may still be
waiting on a job, which `list-jobs` then names) and the boot's errors, which hold a
daemon's own last words when the journal could not tie them to its unit. When the
host is gone already, the console's `[FAILED]` lines say what they can.
`explain(...)` is the pure part, tested on recorded output (tests/corpus/systemd/boot-*).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

SSH_UNIT = "ssh.service"
MAX_LINES = 40
FAILED_START = re.compile(r"\[FAILED\] Failed to start (\S+)")


@dataclass(frozen=True)
class HostAnswers:
    """What a host said about itself (each command's whole output; '' if not asked)."""

    state: str = ""  # systemctl is-system-running
    failed: str = ""  # systemctl --failed --plain --no-legend --no-pager
    status: str = ""  # systemctl status --no-pager -l -n 10 <failed units or ssh.service>
    jobs: str = ""  # systemctl list-jobs --no-pager --no-legend
    errors: str = ""  # journalctl -b -p err --no-pager -n 10


def failed_units(failed: str) -> list[str]:
    """The units `systemctl --failed` lists (plain or with its bullets and legend)."""
    units = []
    for line in failed.splitlines():
        words = line.replace("●", " ").replace("*", " ").split()
        if len(words) >= 4 and words[2] == "failed" and "." in words[0]:
            units.append(words[0])
    return units


def console_failures(console: str) -> list[str]:
    """The units the console reported as failing to start, in order, once each."""
    units: list[str] = []
    for found in FAILED_START.finditer(console):
        if found.group(1) not in units:
            units.append(found.group(1))
    return units


def clean(text: str) -> list[str]:
    """Non-empty lines without the console's carriage returns."""
    return [ln.replace("\r", "").rstrip() for ln in text.splitlines() if ln.strip("\r ")]


def explain(answers: HostAnswers | None, console: str) -> str:
    """What to say about a host whose sshd never answered: the failing units and their
    status lines, else the console's failures (`answers` None: the host did not answer)."""
    if answers is None:
        failing = console_failures(console)
        if failing:
            head = f"console: {', '.join(failing)} failed to start"
        else:
            head = "console: no unit failed to start; its last lines"
        tail = [] if failing else clean(console)[-10:]
        return "\n".join([head, *("  " + ln for ln in tail)])
    failing = failed_units(answers.failed)
    state = answers.state.strip() or "unknown"
    if failing:
        head = f"failed: {', '.join(failing)} (system {state})"
    else:
        head = f"no unit failed (system {state}); {SSH_UNIT} and the jobs left"
    body = clean(answers.status)
    if not failing:
        body += clean(answers.jobs)
    body += [ln for ln in clean(answers.errors) if ln not in body]
    return "\n".join([head, *("  " + ln for ln in body[:MAX_LINES])])


# -- asking the host ----------------------------------------------------------------------
def in_host(init_pid: int, command: str) -> str:
    """A shell command run inside the host (all of its namespaces), its output."""
    try:
        result = subprocess.run(
            ["nsenter", "-t", str(init_pid), "-a", "sh", "-c", command],
            capture_output=True,
            text=True,
            timeout=15,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    if result.stderr.startswith("nsenter:"):  # the host is gone
        return ""
    return result.stdout + result.stderr


def ask(init_pid: int) -> HostAnswers | None:
    """The host's answers, None if it cannot be entered (gone)."""
    state = in_host(init_pid, "systemctl is-system-running")
    if not state.strip():
        return None
    failed = in_host(init_pid, "systemctl --failed --plain --no-legend --no-pager")
    units = " ".join(failed_units(failed)) or SSH_UNIT
    return HostAnswers(
        state=state,
        failed=failed,
        status=in_host(init_pid, f"systemctl status --no-pager -l -n 10 {units}"),
        jobs=in_host(init_pid, "systemctl list-jobs --no-pager --no-legend"),
        errors=in_host(init_pid, "journalctl -b -p err --no-pager -n 10"),
    )


def why_down(init_pid: int | None, console_log: Path) -> str:
    """Why the host's sshd does not answer, from the host or else its console."""
    answers = ask(init_pid) if init_pid else None
    try:
        console = console_log.read_text(errors="replace")
    except OSError:
        console = ""
    return explain(answers, console)
