"""The systemd runtime on a host: one unit file per seat, started and stopped one at a time.

The adapter of `fleet.runtimes.systemd`. A seat's unit is written atomically to
`/etc/systemd/system/fleet-<seat>.service` (the previous one kept beside it as `.prev`),
its `${VAR}` secrets only to `/etc/fleet/fleet-<seat>.env` (0600), then `systemctl
daemon-reload`; `start_seat` enables and (re)starts only that unit. A snapshot is every
fleet unit's text, so rollback writes them back. Hand-made units (adopted by `fleet
import`) are stopped, started, and disabled and stopped for good by name. Called through
`reconciler.runtimes.adapter_for(host)` by the apply workflows, drain, bench and the loop.

A surge's second copy is the instance `<seat>-b` (`DesiredFleet.instance_name`): its unit
`fleet-<seat>-b.service`, rendered from the seat on its second port. Both copies read the
one secrets file `/etc/fleet/fleet-<seat>.env`; it stays while either unit is there and
goes with the last one.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from fleet.engines import parse_engine_argv
from fleet.facts.argv import argv_of
from fleet.runtimes import systemd_unit as units
from fleet.runtimes.base import Runtime
from fleet.runtimes.systemd import SYSTEMD, SystemdHostSettings, dirs_of, parse_unit_definition
from fleet.spec.models import SECOND_COPY, DesiredFleet, Host
from reconciler.adapters.environment import seat_secrets
from reconciler.host import HostSession
from reconciler.runtimes.base import AdoptsHandMade, Snapshot


def list_units(host: Host) -> str:
    """Shell listing fleet's units on a host, each name ended by a NUL (`unit_names`)."""
    unit_dir = shlex.quote(dirs_of(host).unit_dir)
    return (
        f"cd {unit_dir} && for u in {units.UNIT_PREFIX}*.service; do "
        '[ -f "$u" ] && printf \'%s\\0\' "$u"; done; true'
    )


def unit_names(listed: str) -> list[str]:
    """The names `list_units` printed (a name holding a space or a newline is one name)."""
    return sorted(name for name in listed.split("\0") if name)


def systemctl(*words: str) -> str:
    """A systemctl command line."""
    return " ".join(["systemctl", *(shlex.quote(w) for w in words)])


class SystemdAdapter(AdoptsHandMade):
    """systemd on a host, one unit per seat."""

    runtime: Runtime = SYSTEMD

    def describe(self, host: Host) -> str:
        return f"{dirs_of(host).unit_dir}/{units.UNIT_PREFIX}*.service"

    def snapshot(self, conn: HostSession, host: Host) -> Snapshot:
        names = unit_names(conn.run(list_units(host)).stdout)
        unit_dir = dirs_of(host).unit_dir
        texts = {name: conn.read_file(f"{unit_dir}/{name}") for name in sorted(names)}
        found = {name: text for name, text in texts.items() if text is not None}
        return json.dumps(found, sort_keys=True) if found else None

    def write_seats(
        self,
        conn: HostSession,
        desired: DesiredFleet,
        host: Host,
        previous: Snapshot,
        changes: dict[str, dict[str, Any] | None],
    ) -> None:
        before = json.loads(previous) if previous else {}
        where = dirs_of(host)
        for name, definition in sorted(changes.items()):
            path = units.unit_path(name, where.unit_dir)
            if definition is None:
                conn.run("rm -f " + " ".join(shlex.quote(p) for p in (path, path + ".prev")))
                conn.run(unused_env_files(name, where))
                continue
            seat = desired.seats[seat_of(desired, name)]
            env_text = units.render_env_file(seat, seat_secrets(" ".join(seat.env.values())))
            if env_text is not None:
                conn.check(f"mkdir -p {shlex.quote(where.env_dir)}")
                path_of_env = units.env_file_path(seat.name, where.env_dir)
                conn.write_file_atomic(path_of_env, env_text, mode=0o600)
            if units.unit_name(name) in before:
                conn.write_file_atomic(path + ".prev", before[units.unit_name(name)])
            conn.write_file_atomic(path, units.render_unit(seat, where.env_dir))
        conn.check(f"mkdir -p {shlex.quote(host.apply_state_dir)} && systemctl daemon-reload")

    def restore(self, conn: HostSession, host: Host, previous: Snapshot) -> None:
        before: dict[str, str] = json.loads(previous) if previous else {}
        unit_dir = dirs_of(host).unit_dir
        for name in unit_names(conn.run(list_units(host)).stdout):
            if name not in before:
                conn.run(f"rm -f {shlex.quote(f'{unit_dir}/{name}')}")
        for name, text in sorted(before.items()):
            conn.write_file_atomic(f"{unit_dir}/{name}", text)
        conn.check("systemctl daemon-reload")

    def start_seat(self, conn: HostSession, desired: DesiredFleet, host: Host, seat: str) -> None:
        start_unit(conn, units.unit_name(seat))

    def remove_seat(self, conn: HostSession, desired: DesiredFleet, host: Host, seat: str) -> None:
        stop_unit(conn, units.unit_name(seat))

    def restart(self, conn: HostSession, host: Host, instance: str) -> None:
        conn.check(self.restart_command(instance), timeout=300)

    def restart_command(self, instance: str) -> str:
        return systemctl("restart", instance)

    def read_log(self, conn: HostSession, instance: str, since: str, lines: int) -> str:
        # the current run's output (its invocation), which starts after `since` anyway
        command = systemctl("show", "-p", "InvocationID", "--value", instance)
        return conn.run(
            f"journalctl -o cat --no-pager _SYSTEMD_INVOCATION_ID=$({command}) | tail -n {lines}"
        ).stdout

    def port_of(self, conn: HostSession, host: Host, seat: str) -> int | None:
        result = conn.run(systemctl("show", "-p", "MainPID", "--value", units.unit_name(seat)))
        pid = result.stdout.strip()
        if not pid.isdigit() or pid == "0":
            return None
        cmdline = shlex.quote(f"/proc/{pid}/cmdline")
        argv = argv_of(conn.run(f"cat {cmdline}").stdout)
        return parse_engine_argv(list(argv)).port

    def port_in(self, previous: Snapshot, seat: str) -> int | None:
        text = (json.loads(previous) if previous else {}).get(units.unit_name(seat))
        if not text:
            return None
        definition = parse_unit_definition(text)
        return parse_engine_argv([definition["image"], *definition["command"]]).port

    def stop_hand_made(self, conn: HostSession, name: str) -> None:
        conn.check(systemctl("stop", _unit(name)), timeout=300)

    def start_hand_made(self, conn: HostSession, name: str) -> None:
        conn.check(systemctl("start", _unit(name)), timeout=300)

    def remove_hand_made(self, conn: HostSession, name: str) -> None:
        conn.check(f"{systemctl('disable', '--now', _unit(name))} 2>&1", timeout=300)


def seat_of(desired: DesiredFleet, instance: str) -> str:
    """The seat an instance is a copy of: itself, or `<seat>` of its `<seat>-b`."""
    return instance if instance in desired.seats else instance.removesuffix(SECOND_COPY)


def unused_env_files(instance: str, where: SystemdHostSettings) -> str:
    """Shell removing the secrets file of the seat an instance was a copy of, once neither
    of its units is left (the other copy of a surging seat still reads it)."""
    commands = []
    for seat in sorted({instance, instance.removesuffix(SECOND_COPY)}):
        first = shlex.quote(units.unit_path(seat, where.unit_dir))
        second = shlex.quote(units.unit_path(f"{seat}{SECOND_COPY}", where.unit_dir))
        env = shlex.quote(units.env_file_path(seat, where.env_dir))
        commands.append(f"[ -e {first} ] || [ -e {second} ] || rm -f {env}")
    return "; ".join(commands)


def start_unit(conn: HostSession, unit: str) -> None:
    """Enable and (re)start one unit by its name (a seat's, or a second instance of it)."""
    conn.check(f"{systemctl('enable', unit)} 2>&1 && {systemctl('restart', unit)}", timeout=300)


def stop_unit(conn: HostSession, unit: str) -> None:
    """Disable and stop one unit by its name, and forget a failed state it was left in."""
    conn.run(f"{systemctl('disable', '--now', unit)} 2>&1", timeout=300)
    conn.run(f"{systemctl('reset-failed', unit)} 2>/dev/null")


def _unit(name: str) -> str:
    """A hand-made instance's unit (instances are named by their unit, `.service` or not)."""
    return name if re.search(r"\.(service|scope)$", name) else f"{name}.service"


SYSTEMD_ADAPTER = SystemdAdapter()
