"""A stopped seat's exit reason is read before its log: vLLM 0.32 stopped with SIGTERM
while a request runs logs `EngineDeadError` (one of its out-of-memory signatures), which
is the stop's, not an out-of-memory; the kernel's OOM kill, or an end the runtime does not
explain with an out-of-memory line before any stop line, still is. On the fake host's
`docker inspect` (State.ExitCode, State.OOMKilled) with vLLM 0.32's recorded logs
(tests/corpus/vllm-stops), and on `systemctl show` blocks of a unit."""

from __future__ import annotations

import pytest

from fleet.facts.systemctl import parse_show_blocks, unit_status
from fleet.observed.findings import FindingKind, find_issues
from fleet.runtimes.systemd import _instance
from reconciler.workflows.observe import observe_host
from tests.conftest import CORPUS
from tests.fakes.host import FakeHost
from tests.unit.observe.test_hostile_output import tower
from tests.unit.plan.fakes import in_sync
from tests.unit.render.test_compose import example

LOGS = CORPUS / "vllm-stops"
IDLE = (LOGS / "v0.32.0_v1_tiny-llama_cpu-backend_sigterm-idle.log").read_text().splitlines()
DIED = (LOGS / "v0.32.0_v1_tiny-llama_cpu-backend_worker-died-then-sigterm.log").read_text()
DEAD = [line for line in DIED.splitlines() if "EngineDeadError" in line]
STOPPED = "[shutdown] API server: shutdown triggered"
# a stop, then the EngineDeadError of the request it cut (recorded lines, as in the bench's test)
CUT = "\n".join(
    [*IDLE[: next(i for i, ln in enumerate(IDLE) if STOPPED in ln) + 1], *DEAD, *IDLE[-5:]]
)
NO_STOP = "\n".join(ln for ln in DIED.splitlines() if STOPPED not in ln and "SIGTERM" not in ln)
OOM_LOG = "\n".join([*IDLE[:20], "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate"])

CASES = {
    # (exit code, OOMKilled, log) -> (exit reason, out-of-memory finding or None)
    "sigterm-143-cut-request": (143, False, CUT, "stopped with SIGTERM", None),
    "sigterm-exit-0-cut-request": (0, False, CUT, "exited cleanly", None),
    "sigterm-143-engine-dead-no-stop-line": (143, False, NO_STOP, "stopped with SIGTERM", None),
    "oom-killed-137": (
        137,
        True,
        "\n".join(IDLE[:20]),
        "killed by the kernel's OOM killer",
        "killed by the kernel's OOM killer",
    ),
    "died-by-itself-exit-1": (
        1,
        False,
        NO_STOP,
        "exited with status 1",
        "exited with status 1; its log: (APIServer pid=13011) ERROR",
    ),
    "cuda-oom-exit-1": (1, False, OOM_LOG, "exited with status 1", "CUDA out of memory"),
    "sigkill-137-after-a-stop": (137, False, CUT, "killed with SIGKILL", None),
}


def stopped_flash(code: int, oom: bool, log: str) -> FakeHost:
    host = tower()
    flash = host.containers["flash"]
    flash.state, flash.exit_code, flash.oom_killed, flash.log = "exited", code, oom, log
    return host


@pytest.mark.parametrize(
    ("code", "oom", "log", "reason", "memory"), list(CASES.values()), ids=list(CASES)
)
def test_a_stopped_seat_is_out_of_memory_only_when_its_exit_says_so(
    code: int, oom: bool, log: str, reason: str, memory: str | None
) -> None:
    observed = observe_host(example(), stopped_flash(code, oom, log), "tower")
    seat = next(s for s in observed.seats if s.name == "flash")
    assert seat.instance.exit_code == code and seat.exit_reason == reason
    live = in_sync(example())
    observation = live.model_copy(update={"hosts": {**live.hosts, "tower": observed}})
    found = {f.kind: f.message for f in find_issues(example(), observation)
             if f.target == "tower/flash"}  # fmt: skip
    assert f"(exit code {code}: {reason}, 0 restarts)" in found[FindingKind.CONTAINER_NOT_RUNNING]
    said = found.get(FindingKind.OUT_OF_MEMORY)
    if memory is None:
        assert said is None
    else:
        assert said is not None and memory in said


SHOW = "Id=fleet-coder.service\nLoadState=loaded\nActiveState={active}\nSubState={sub}\n"
SHOW += "MainPID=0\nResult={result}\nExecMainCode={code}\nExecMainStatus={status}\n"
UNITS = {
    # systemctl stop: the engine died of the SIGTERM (CLD_KILLED, signal 15)
    "stopped-by-systemctl": ("inactive", "dead", "success", 2, 15, 143, False),
    # the engine caught the SIGTERM and exited 0
    "stopped-exited-0": ("inactive", "dead", "success", 1, 0, 0, False),
    "oom-kill": ("failed", "failed", "oom-kill", 2, 9, 137, True),
    "exited-1": ("failed", "failed", "exit-code", 1, 1, 1, False),
}


@pytest.mark.parametrize(
    ("active", "sub", "result", "main_code", "status", "exit_code", "oom"),
    list(UNITS.values()),
    ids=list(UNITS),
)
def test_a_units_end_reads_as_a_containers(
    active: str, sub: str, result: str, main_code: int, status: int, exit_code: int, oom: bool
) -> None:
    text = SHOW.format(active=active, sub=sub, result=result, code=main_code, status=status)
    unit = unit_status(parse_show_blocks(text)[0])
    definition = {"labels": {}, "environment": {}, "image": "/opt/llama-server", "command": []}
    instance = _instance("fleet-coder.service", unit, "", definition)
    assert (instance.state, instance.exit_code, instance.oom_killed) == ("exited", exit_code, oom)
