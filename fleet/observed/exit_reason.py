"""Why a seat's process is not running, read from its runtime before its log.

A stopped seat's log alone can mislead: vLLM 0.32 stopped with SIGTERM while a request
runs logs its dead-engine error (tests/corpus/vllm-stops), one of its out-of-memory
signatures. So the runtime's own word comes first: Docker's `State.OOMKilled` and exit
code (143 = 128 + SIGTERM: the stop it was asked for; 137 = 128 + SIGKILL: the OOM killer
or a stop that timed out), or a systemd unit's `Result=oom-kill` and `ExecMainCode` /
`ExecMainStatus` (`fleet.facts.systemctl.UnitStatus.exit_code`, the same numbers). Only
an end the runtime does not explain is read from the log, and the log only up to the line
where the engine says it was told to stop (`fleet.observed.bench.oom_line`). Pure.
"""

from __future__ import annotations

from fleet.facts.instance import Instance
from fleet.observed.bench import oom_line

SIGTERM_EXIT, SIGKILL_EXIT = 128 + 15, 128 + 9
OOM_KILLED = "killed by the kernel's OOM killer"


def exit_reason(container: Instance) -> str | None:
    """`stopped with SIGTERM`, `killed by the kernel's OOM killer`, ...; None while it runs."""
    if container.running:
        return None
    code = container.exit_code
    if container.oom_killed:
        return OOM_KILLED
    if code == SIGTERM_EXIT:
        return "stopped with SIGTERM"
    if code == SIGKILL_EXIT:
        return "killed with SIGKILL"
    if code > 128:
        return f"killed by signal {code - 128}"
    return "exited cleanly" if code == 0 else f"exited with status {code}"


def out_of_memory(
    container: Instance,
    log: str,
    signatures: tuple[str, ...],
    stops: tuple[str, ...] = (),
) -> str | None:
    """Why a seat that is not running ran short of memory, else None.

    The runtime's OOM kill is; a stop it was asked for (SIGTERM) or a clean exit is not,
    whatever its log says after; any other end is when its log has one of the engine's
    out-of-memory `signatures` before a line of `stops`.
    """
    if container.running:
        return None
    if container.oom_killed:
        return OOM_KILLED
    if container.exit_code in (0, SIGTERM_EXIT):
        return None
    line = oom_line(log.splitlines(), signatures, stops)
    return f"{exit_reason(container)}; its log: {line[:160]}" if line else None
