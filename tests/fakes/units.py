"""systemd on a fake host: unit files in its `files`, what `systemctl`, `journalctl` and the
fact script answer about them, as the real hosts recorded in tests/corpus/systemd/ do.

`FakeHost` (tests.fakes.host) keeps a `FakeSystemd`: the unit texts systemd loaded at the
last `daemon-reload` (a file edited since shows `NeedDaemonReload=yes`), and one
`FakeUnit` per unit started. Starting a unit reads its file as systemd would: ExecStart's
words (`$$` and `%%` unescaped), `Environment=` (CUDA_VISIBLE_DEVICES names its GPUs) and
`EnvironmentFile=` (a missing one fails the start, as systemd refuses it). A start whose
seat is in the host's `crashes` exits at once with that line in the journal; the
`kill9` method stands for an engine killed and restarted by `Restart=on-failure`
(NRestarts counts it). Its process is the unit's argv at a new pid, in the cgroup
`/system.slice/<unit>`, logging what a healthy engine of its kind logs
(`tests.fakes.engines`). The unit parser here is its own, not fleet's.
"""

from __future__ import annotations

import re
import shlex
import tempfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from fleet.facts.host_facts import GGUF_HEAD_BYTES
from fleet.facts.script import MARK
from reconciler.host import CommandResult
from tests.fakes.engines import engine_log
from tests.lab.models import architectures, catalog, write_gguf

if TYPE_CHECKING:
    from tests.fakes.host import FakeHost

UNIT_DIR = "/etc/systemd/system"
STAMP = "Thu 2026-12-03 18:32:28 UTC"
JOURNAL_AT = "2026-12-03T18:32:28+0000"
OK = CommandResult(0, "", "")


@cache
def gguf_file(name: str) -> tuple[int, bytes]:
    """(size, head) of one of the lab's GGUF models (tests/lab/models/catalog.json): its
    real header, written by the lab's own writer, and the size of the real file."""
    entry = catalog()[name]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        size = write_gguf(path, architectures()[str(entry["gguf"])], str(entry["file_type"]))
        with path.open("rb") as gguf:
            return size, gguf.read(GGUF_HEAD_BYTES)


def unit_fields(text: str) -> dict[str, list[str]]:
    """Every `Key=value` of a unit file, values in order."""
    fields: dict[str, list[str]] = {}
    for line in text.replace("\\\n", " ").splitlines():  # a trailing backslash continues
        key, equals, value = line.partition("=")
        if equals and not line.startswith(("#", ";")):
            fields.setdefault(key.strip(), []).append(value.strip())
    return fields


def _words(line: str) -> list[str]:
    return [w.replace("$$", "$").replace("%%", "%") for w in shlex.split(line)]


@dataclass
class FakeUnit:
    """One started unit: its process and what systemd counts of it."""

    name: str
    argv: list[str]
    gpus: list[int]
    pid: int
    state: str = "running"  # running, failed, inactive
    restarts: int = 0
    invocation: int = 0
    enabled: bool = False
    log: list[str] = field(default_factory=list)

    @property
    def running(self) -> bool:
        """True while its main process runs."""
        return self.state == "running"

    @property
    def seat(self) -> str:
        """The seat a fleet unit serves (a hand-made unit: its own name)."""
        return self.name.removesuffix(".service").removeprefix("fleet-")


@dataclass
class FakeSystemd:
    """What systemd on a fake host has loaded and runs."""

    loaded: dict[str, str] = field(default_factory=dict)  # unit -> text at daemon-reload
    units: dict[str, FakeUnit] = field(default_factory=dict)
    pids: int = 7000

    def reload(self, files: dict[str, str]) -> None:
        """`systemctl daemon-reload`: load every unit file there is now."""
        self.loaded = {
            path.rsplit("/", 1)[1]: text
            for path, text in files.items()
            if path.startswith(UNIT_DIR + "/") and path.endswith(".service")
        }


def unit(name: str) -> str:
    """A unit's full name (systemctl adds `.service` to a bare one)."""
    return name if name.endswith((".service", ".scope")) else f"{name}.service"


def start(host: FakeHost, name: str) -> CommandResult:
    """(Re)start a unit from the text systemd loaded, as `systemctl restart` does."""
    systemd, name = host.systemd, unit(name)
    text = systemd.loaded.get(name)
    if text is None:
        return CommandResult(5, "", f"Failed to restart {name}: Unit {name} not found.")
    fields = unit_fields(text)
    env = dict(
        w.partition("=")[::2] for line in fields.get("Environment", []) for w in _words(line)
    )
    for path in fields.get("EnvironmentFile", []):
        if path.lstrip("-") not in host.files and not path.startswith("-"):
            return CommandResult(1, "", f"Job for {name} failed: environment file {path} missing")
    systemd.pids += 100
    old = systemd.units.get(name)
    crash = host.crashes.pop(name.removesuffix(".service").removeprefix("fleet-"), None)
    argv = _words(fields.get("ExecStart", [""])[0])
    ran = FakeUnit(
        name=name,
        argv=argv,
        gpus=[int(g) for g in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if g.isdigit()],
        pid=systemd.pids,
        state="failed" if crash else "running",
        restarts=0,
        invocation=(old.invocation + 1) if old else 1,
        enabled=old.enabled if old else False,
        log=[f"{crash}"] if crash else engine_log(argv).splitlines(),
    )
    systemd.units[name] = ran
    host.started.append(name)
    return OK


def kill9(host: FakeHost, name: str) -> None:
    """The engine killed; `Restart=on-failure` starts it again and counts the restart."""
    ran = host.systemd.units[unit(name)]
    host.systemd.pids += 100
    ran.pid, ran.restarts = host.systemd.pids, ran.restarts + 1
    ran.log = ran.log[:]  # the same run's output, as a new start of the same argv prints


def show(host: FakeHost, name: str) -> str:
    """`systemctl show UNIT` with the properties the fact script asks for."""
    name = unit(name)
    text, ran = host.systemd.loaded.get(name), host.systemd.units.get(name)
    if text is None and ran is None:
        return f"Id={name}\nLoadState=not-found\nActiveState=inactive\nSubState=dead\nMainPID=0\n"
    fields = unit_fields(text or "")
    argv = ran.argv if ran else _words(fields.get("ExecStart", [""])[0])
    path = f"{UNIT_DIR}/{name}"
    state, sub = ("active", "running") if ran and ran.running else ("inactive", "dead")
    if ran and ran.state == "failed":
        state, sub = "failed", "failed"
    shown = " ".join(a.replace("$", "$$") for a in argv)
    props = {
        "MainPID": str(ran.pid if ran and ran.running else 0),
        "Result": "exit-code" if state == "failed" else "success",
        "NRestarts": str(ran.restarts if ran else 0),
        "ExecStart": f"{{ path={argv[0] if argv else ''} ; argv[]={shown} ; "
        "ignore_errors=no ; pid=0 }",
        "Id": name,
        "LoadState": "loaded",
        "ActiveState": state,
        "SubState": sub,
        "FragmentPath": path,
        "UnitFileState": "enabled" if ran and ran.enabled else "disabled",
        "ActiveEnterTimestamp": STAMP if state == "active" else "",
        "NeedDaemonReload": "yes" if host.files.get(path) != text else "no",
        "InvocationID": f"{ran.invocation:032x}" if ran else "",
    }
    return "".join(f"{k}={v}\n" for k, v in props.items())


def journal(host: FakeHost, name: str) -> str:
    """`journalctl -u UNIT -o short-iso`: systemd's Started line and the run's output."""
    ran = host.systemd.units.get(unit(name))
    if ran is None:
        return "-- No entries --\n"
    ident = ran.argv[0].rsplit("/", 1)[-1] if ran.argv else "unit"
    lines = [f"{JOURNAL_AT} {host.name} systemd[1]: Started {ran.name} - {ran.name}."]
    lines += [f"{JOURNAL_AT} {host.name} {ident}[{ran.pid}]: {line}" for line in ran.log]
    if ran.state == "failed":
        lines.append(
            f"{JOURNAL_AT} {host.name} systemd[1]: {ran.name}: Main process exited, "
            "code=exited, status=1/FAILURE"
        )
    return "\n".join(lines) + "\n"


def listed(host: FakeHost, stdin: str) -> list[str]:
    """The units the fact script's selector names: a seat's copies whose files exist, or
    every fleet unit and every hand-made one whose ExecStart runs llama-server or vLLM."""
    if match := re.search(r"for u in ([^;\n*]+); do \[ -f \S+ \] \|\| continue", stdin):
        named = shlex.split(match.group(1))
        return [n for n in named if f"{UNIT_DIR}/{n}" in host.files]
    found = []
    for path, text in host.files.items():
        name = path.removeprefix(UNIT_DIR + "/")
        if not path.startswith(UNIT_DIR + "/") or "/" in name or not name.endswith(".service"):
            continue
        runs = re.search(r"^ExecStart=\S*(llama-server|vllm)", text, re.MULTILINE)
        if name.startswith("fleet-") or runs:
            found.append(name)
    return sorted(found)


def unit_sections(host: FakeHost, stdin: str, mark: str = MARK) -> list[str]:
    """The fact script's systemd sections (`systemd-rc`, and per unit `unit`, `cmdline`,
    `logs`, `unit-file`), as the recorded hosts print them."""
    parts = [f"{mark}systemd-rc 0"]
    for name in listed(host, stdin):
        parts += [f"{mark}unit {name}", show(host, name)]
        ran = host.systemd.units.get(name)
        if ran and ran.running:
            parts += [f"{mark}cmdline {name}", "".join(f"{arg}\0" for arg in ran.argv)]
        parts += [f"{mark}logs {name}", journal(host, name)]
        if (text := host.files.get(f"{UNIT_DIR}/{name}")) is not None:
            parts += [f"{mark}unit-file {name}", text]
    return parts


def processes(host: FakeHost) -> list[tuple[int, int, str]]:
    """(pid, GPU, cgroup) of each GPU process of a running unit."""
    running = [u for u in host.systemd.units.values() if u.running]
    return [(u.pid, gpu, f"/system.slice/{u.name}") for u in running for gpu in u.gpus]


# A llama-server unit as an operator writes one by hand (what `fleet import` adopts): the
# fake host's import tests and the lab's real systemd hosts use the same text.
HAND_MADE = """[Unit]
Description=llama.cpp server, set up by hand

[Service]
ExecStart=/usr/local/bin/llama-server --model /models/qwen3-0.6b-q4_k_m.gguf --alias hand \\
    --host 0.0.0.0 --port 8072 --ctx-size 8192 --parallel 2 --n-gpu-layers 0 --metrics
Restart=on-failure

[Install]
WantedBy=multi-user.target
"""
