"""The systemd runtime: each seat of a host is a unit, `/etc/systemd/system/fleet-<seat>.service`.

The second runtime behind `fleet.runtimes.base.Runtime`, for hosts that run engines with
no Docker (llama-server or `vllm serve` as services). On such a host a seat's `image` is
the engine's executable (`/usr/local/bin/llama-server`), the unit's ExecStart is that and
the argv its engine module renders (`fleet.runtimes.systemd_unit`). The fact script lists
the units fleet wrote and every hand-made unit whose ExecStart starts an engine (each
engine's `EXECUTABLE`),
and for each prints `systemctl show` (state, MainPID, NRestarts, NeedDaemonReload), the
main process's /proc cmdline, its journal and its unit file. Each unit becomes a neutral
instance (`Instance`: id = the unit's name, labels from its `X-Fleet-*` fields); a
GPU process belongs to the unit its cgroup names. A surge runs a seat's second copy as a
second unit, `fleet-<seat>-b.service` on its second port (`SURGES`), beside the
first and sharing its secrets file; fleet's units are read by unit, so both copies and
their definitions are seen while both run. What runs these is
`reconciler.runtimes.systemd`.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pydantic import Field

from fleet.engines import ENGINES
from fleet.errors import FleetError
from fleet.facts.argv import argv_of
from fleet.facts.instance import Instance
from fleet.facts.script import LOG_LINES, Fact, FactOutput, Parts
from fleet.names import HASH_LABEL, MANAGED_LABEL, SEAT_LABEL
from fleet.runtimes import systemd_unit as units
from fleet.runtimes.base import ImportLine, RuntimeBase, SeatInstances
from fleet.secrets import mask_argv, mask_env_value
from fleet.spec.host_settings import RuntimeSettings
from fleet.spec.load import Sources
from fleet.spec.models import SECOND_COPY, DesiredFleet, Host, ImagePolicy, Seat
from fleet.spec.problems import Problem
from fleet.spec.seat_rules import seat_file

PLAIN_PATH = r"^/[A-Za-z0-9_./-]+$"  # written into unit files and shell commands as is


class SystemdHostSettings(RuntimeSettings):
    """A systemd host's own keys: where fleet's units and their secrets files go."""

    unit_dir: str = Field(
        "/etc/systemd/system", pattern=PLAIN_PATH, description="Directory of fleet's units."
    )
    env_dir: str = Field(
        "/etc/fleet", pattern=PLAIN_PATH, description="Directory of the units' secrets files."
    )


if TYPE_CHECKING:  # the facts' parsers are imported where observe reads them, not by validate
    from fleet.facts.systemctl import UnitStatus


def _unit_loop(unit_dir: str, selector: str) -> str:
    """Shell printing, for each unit `selector` loops over (`host_units`, `seat_units`:
    names as the shell globbed them, never word-split from a listing), what observe reads
    of it."""
    from fleet.facts.systemctl import PROPERTIES

    unit_file = f'"{unit_dir}/$u"'
    return (
        "systemctl show -p Version --value >/dev/null 2>&1\nmark systemd-rc $?\n"
        f"{selector}\n"
        f'  mark unit "$u"; systemctl show "$u" -p {",".join(PROPERTIES)}\n'
        '  pid=$(systemctl show "$u" -p MainPID --value)\n'
        '  [ "${pid:-0}" -gt 0 ] && { mark cmdline "$u"; cat "/proc/$pid/cmdline"; }\n'
        '  mark logs "$u"; journalctl -u "$u" -o short-iso --no-pager '
        f"-n {LOG_LINES} 2>/dev/null\n"
        f'  [ -f {unit_file} ] && {{ mark unit-file "$u"; cat {unit_file}; }}\n'
        "done\n"
    )


def dirs_of(host: Host) -> SystemdHostSettings:
    """A systemd host's own settings (its unit and secrets directories)."""
    if not isinstance(host.settings, SystemdHostSettings):
        raise FleetError(f"host {host.name} runs {host.runtime}, not systemd", where=host.name)
    return host.settings


def host_units(unit_dir: str = units.UNIT_DIR) -> str:
    """The head of a shell loop over fleet's units and every hand-made unit whose
    ExecStart starts an engine (as each registered engine's `EXECUTABLE` says a host
    starts it), each unit's name `$u` as the shell globbed it (a name holding a space or
    a newline is one name); its body follows, then `done`."""
    starts = "|".join(f"({engine.EXECUTABLE})" for engine in ENGINES.values())
    pattern = shlex.quote(f"^ExecStart=({starts})")
    return (
        f'for p in {shlex.quote(unit_dir)}/*.service; do u=${{p##*/}}; [ -f "$p" ] || continue\n'
        f'  case $u in {units.UNIT_PREFIX}*) ;; *) grep -q -E {pattern} -- "$p" 2>/dev/null'
        " || continue;; esac"
    )


def parse_unit_definition(text: str) -> dict[str, Any]:
    """A unit file fleet wrote, as the definition plan compares: its executable, argv,
    plain environment, secrets file, restart policy and `X-Fleet-*` labels."""
    fields: dict[str, list[str]] = {}
    for line in text.splitlines():
        key, equals, value = line.partition("=")
        if equals and not line.startswith("#"):
            fields.setdefault(key.strip(), []).append(value.strip())
    words = _words(fields.get("ExecStart", [""])[0])
    environment: dict[str, str] = {}
    for assignment in (w for line in fields.get("Environment", []) for w in _words(line)):
        name, _, value = assignment.partition("=")
        environment[name] = value
    labels = {}
    if units.SEAT_KEY in fields:
        labels = {MANAGED_LABEL: "true", SEAT_LABEL: fields[units.SEAT_KEY][0]}
        labels[HASH_LABEL] = (fields.get(units.HASH_KEY) or [""])[0]
    return {
        "image": words[0] if words else "",
        "command": words[1:],
        "environment": environment,
        "environment_file": _first(fields, "EnvironmentFile"),
        "restart": _first(fields, "Restart"),
        "labels": labels,
    }


def _first(fields: dict[str, list[str]], key: str) -> str | None:
    values = fields.get(key)
    return values[0] if values else None


def _words(line: str) -> list[str]:
    """The words of an ExecStart or Environment value, as systemd splits them."""
    try:
        split = shlex.split(line)
    except ValueError:
        split = line.split()
    return [w.replace("$$", "$").replace("%%", "%") for w in split]


HAND_EDITED = "hand-edited"


def _as_running(definition: dict[str, Any], status: UnitStatus, text: str) -> dict[str, Any]:
    """A unit fleet wrote, its spec hash `hand-edited` when its file was changed since
    (its text no longer has the hash it carries, or systemd has not reloaded it): drift."""
    labels = definition["labels"]
    if not labels:
        return definition
    edited = units.written_hash(text) != labels.get(HASH_LABEL) or status.need_daemon_reload
    if not edited:
        return definition
    return {**definition, "labels": {**labels, HASH_LABEL: HAND_EDITED}}


def _state(status: UnitStatus) -> str:
    """The unit's state in the words instances use (docker's)."""
    if status.active_state == "active" or status.active_state == "deactivating":
        return "running"
    if status.sub_state == "auto-restart":
        return "restarting"
    return "created" if status.active_state == "activating" else "exited"


def _instance(unit: str, status: UnitStatus, cmdline: str, definition: dict[str, Any]) -> Instance:
    argv = mask_argv(argv_of(cmdline))
    env = {k: mask_env_value(k, v) for k, v in definition["environment"].items()}
    visible = env.pop("CUDA_VISIBLE_DEVICES", "")
    return Instance(
        id=unit,
        name=unit.removesuffix(".service"),
        state=_state(status),
        exit_code=status.exit_code,
        oom_killed=status.result == "oom-kill",
        restart_count=status.restarts,
        started_at=status.active_since or "",
        pid=status.main_pid or 0,
        image=status.exec_path or definition["image"],
        labels=definition["labels"],
        argv=argv or mask_argv(tuple([definition["image"], *definition["command"]])),
        gpu_request=tuple(g for g in visible.split(",") if g),
        env=env,
    )


NOT_ANSWERING = "systemd is not answering on this host"


def _read_units(parts: Parts) -> SeatInstances:
    """Every listed unit as an instance, its run's log, and the definitions fleet wrote."""
    from fleet.facts.systemctl import parse_show_blocks, unit_status
    from fleet.facts.unit_journal import parse_unit_journal

    listed, files = dict(parts["unit"]), dict(parts["unit-file"])
    instances, logs, definitions = [], {}, {}
    for unit in sorted(listed):
        blocks = parse_show_blocks(listed[unit])
        status = unit_status(blocks[0] if blocks else {}, unit)
        text = files.get(unit, "")
        definition = _as_running(parse_unit_definition(text), status, text)
        instances.append(_instance(unit, status, parts["cmdline"].get(unit, ""), definition))
        logs[unit] = parse_unit_journal(parts["logs"].get(unit, ""), unit).text
        if definition["labels"]:
            definitions[unit] = definition  # by unit: both copies of a surging seat
    return SeatInstances(
        instances=tuple(instances),
        logs=logs,
        definitions=definitions,
        error=None if "0" in parts["systemd-rc"] else NOT_ANSWERING,
    )


UNITS: Fact[SeatInstances] = Fact(
    name="units",
    command=_unit_loop,
    sections=("systemd-rc", "unit", "cmdline", "logs", "unit-file"),
    process=_read_units,
    default=SeatInstances(error=NOT_ANSWERING),
    requires_command="systemctl",
)


def seat_units(seat: str, unit_dir: str = units.UNIT_DIR) -> str:
    """The head of a shell loop over the units of one seat's copies that exist (one, or
    two mid-surge), as `host_units`."""
    names = " ".join(shlex.quote(units.unit_name(n)) for n in (seat, f"{seat}{SECOND_COPY}"))
    return f'for u in {names}; do [ -f {shlex.quote(unit_dir)}/"$u" ] || continue'


class SystemdRuntime(RuntimeBase):
    """Seats as systemd units on the host (`fleet-<seat>.service`)."""

    NAME = "systemd"
    SETTINGS: type[RuntimeSettings] = SystemdHostSettings
    INSTANCE = "unit"
    DEFINITION = "unit definition"
    RESTORED = "unit files"
    MANAGED_BY = "fleet's units"
    SURGES = True  # a second unit fleet-<seat>-b.service
    REPORTS_RESTARTS = True  # Restart=on-failure: NRestarts counts what systemd restarted
    RESTARTED_BY = "systemd"
    IMAGE_SOURCE = "the unit's ExecStart: the engine's executable"

    def check_image(self, seat: Seat, policy: ImagePolicy, src: Sources) -> Iterator[Problem]:
        """The unit's executable: `image` is the engine's absolute path on the host."""
        if not seat.image.startswith("/"):
            message = f"on systemd host {seat.host}, image is the engine's executable path"
            yield src.problem(seat_file(seat), ("image",), f"{message}, not {seat.image!r}")

    def host_facts(self, host: Host) -> tuple[str, ...]:
        unit_dir = dirs_of(host).unit_dir
        return (UNITS.entry(unit_dir, host_units(unit_dir)),)

    def seat_facts(self, host: Host, seat: str) -> tuple[str, ...]:
        unit_dir = dirs_of(host).unit_dir
        return (UNITS.entry(unit_dir, seat_units(seat, unit_dir)),)

    def read_seats(self, output: FactOutput) -> SeatInstances:
        return output[UNITS]

    def owner(self, cgroup: str) -> str | None:
        from fleet.facts.cgroup import parse_cgroup_unit

        return parse_cgroup_unit(cgroup)

    def render_seat(self, seat: Seat, host: Host) -> dict[str, Any]:
        return parse_unit_definition(units.render_unit(seat, dirs_of(host).env_dir))

    def render_host(self, desired: DesiredFleet, host_name: str) -> str:
        """Each seat's unit where its live copy runs (`fleet-<seat>-b` after a surge)."""
        where = dirs_of(desired.hosts[host_name])
        return "".join(
            f"# {units.unit_path(desired.instance_name(s.name), where.unit_dir)}\n"
            f"{units.render_unit(s, where.env_dir)}\n"
            for s in desired.seats_on(host_name)
        )

    def import_lines(self, instances: tuple[Instance, ...]) -> list[ImportLine]:
        return [("runtime", self.NAME, "the engines run as systemd units")]


SYSTEMD = SystemdRuntime()
