"""The docker compose runtime on a host: its compose file, and one service at a time.

The adapter of `fleet.runtimes.compose`. Only the named service is touched
(`up -d --no-deps SERVICE`), so untouched seats are never recreated. The compose file is
written atomically and the previous one is kept beside it as `compose.yaml.prev`; the
`${VAR}` secrets of seat `env` reach the host only in a 0600 `.env` beside it. Hand-made
containers (adopted by `fleet import`) are stopped, started and removed by name.
Called through `reconciler.runtimes.adapter_for(host)` by the apply workflows, drain,
bench and the reconcile loop.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from fleet.engines import parse_engine_argv
from fleet.names import COMPOSE_PROJECT_LABEL, COMPOSE_SERVICE_LABEL, SEAT_LABEL
from fleet.runtimes.base import Runtime
from fleet.runtimes.compose import COMPOSE, HEADER, compose_path, project_name, settings_of
from fleet.spec.models import DesiredFleet, Host
from fleet.yamltext import dump_yaml, load_yaml
from reconciler.adapters.environment import seat_secrets
from reconciler.host import HostSession, checked
from reconciler.runtimes.base import AdoptsHandMade, Snapshot


def compose(desired: DesiredFleet, host: Host, *args: str) -> str:
    """A `docker compose` command line for the host's project."""
    words = [
        "docker",
        "compose",
        "-p",
        project_name(desired, host.name),
        "-f",
        compose_path(host),
        *args,
    ]
    return " ".join(shlex.quote(w) for w in words)


def merged_compose(
    desired: DesiredFleet,
    host: Host,
    previous: str | None,
    changes: dict[str, dict[str, Any] | None],
) -> str:
    """The previous file with these services set (dict) or removed (None), sorted."""
    services: dict[str, Any] = {}
    if previous:
        tree = load_yaml(previous) or {}
        services = {str(k): v for k, v in (tree.get("services") or {}).items()}
    for name, service in changes.items():
        if service is None:
            services.pop(name, None)
        else:
            services[name] = service
    document = {
        "name": project_name(desired, host.name),
        "services": {k: services[k] for k in sorted(services)},
    }
    return dump_yaml(document, HEADER)


def env_file(text: str) -> str:
    """The `.env` compose reads for the file's `${VAR}` interpolations, from our environment.

    Secrets reach the host only here (mode 0600), never the compose file or desired/.
    """
    return "".join(f"{name}={value}\n" for name, value in seat_secrets(text).items())


class ComposeAdapter(AdoptsHandMade):
    """docker compose on a host, one service per seat."""

    runtime: Runtime = COMPOSE

    def describe(self, host: Host) -> str:
        return compose_path(host)

    def snapshot(self, conn: HostSession, host: Host) -> Snapshot:
        return conn.read_file(compose_path(host))

    def write_seats(
        self,
        conn: HostSession,
        desired: DesiredFleet,
        host: Host,
        previous: Snapshot,
        changes: dict[str, dict[str, Any] | None],
    ) -> None:
        text = merged_compose(desired, host, previous, changes)
        path = compose_path(host)
        secrets = env_file(text)
        directory = settings_of(host).compose_dir
        conn.check(f"mkdir -p {shlex.quote(directory)}")
        conn.write_file_atomic(f"{directory.rstrip('/')}/.env", secrets, mode=0o600)
        if previous is not None:
            conn.write_file_atomic(path + ".prev", previous)
        conn.write_file_atomic(path, text)

    def restore(self, conn: HostSession, host: Host, previous: Snapshot) -> None:
        path = compose_path(host)
        if previous is None:
            conn.run(f"rm -f {shlex.quote(path)}")
        else:
            conn.write_file_atomic(path, previous)

    def start_seat(self, conn: HostSession, desired: DesiredFleet, host: Host, seat: str) -> None:
        conn.check(compose(desired, host, "up", "-d", "--no-deps", seat), timeout=900)

    def remove_seat(self, conn: HostSession, desired: DesiredFleet, host: Host, seat: str) -> None:
        command = compose(desired, host, "rm", "--stop", "--force", seat)
        result = conn.run(command, timeout=300)
        if result.exit_status == 0:
            return
        if "no such service" not in result.stderr + result.stdout:
            checked(host.name, command, result)
        # the compose file no longer defines it (edited or reset by hand): the containers
        # compose made for that service of this project, by label
        project = shlex.quote(f"label={COMPOSE_PROJECT_LABEL}={project_name(desired, host.name)}")
        mine = f"--filter {shlex.quote(f'label={COMPOSE_SERVICE_LABEL}={seat}')} --filter {project}"
        conn.check(f'ids=$(docker ps -aq {mine}); [ -z "$ids" ] || docker rm -f $ids', timeout=300)

    def restart(self, conn: HostSession, host: Host, instance: str) -> None:
        conn.check(self.restart_command(instance), timeout=300)

    def restart_command(self, instance: str) -> str:
        return f"docker restart {shlex.quote(instance)}"

    def read_log(self, conn: HostSession, instance: str, since: str, lines: int) -> str:
        command = f"docker logs --since {shlex.quote(since)} {shlex.quote(instance)} 2>&1"
        return conn.run(f"{command} | tail -n {lines}").stdout

    def port_of(self, conn: HostSession, host: Host, seat: str) -> int | None:
        label = shlex.quote(f"label={SEAT_LABEL}={seat}")
        result = conn.run(f"docker ps --filter {label} --format '{{{{.Ports}}}}'")
        match = re.search(r":(\d+)->", result.stdout)
        return int(match.group(1)) if match else None

    def port_in(self, previous: Snapshot, seat: str) -> int | None:
        tree = load_yaml(previous) if previous else None
        definition = ((tree or {}).get("services") or {}).get(seat) or {}
        argv = [*(definition.get("entrypoint") or []), *(definition.get("command") or [])]
        return parse_engine_argv([str(a) for a in argv]).port

    def stop_hand_made(self, conn: HostSession, name: str) -> None:
        conn.check(f"docker stop {shlex.quote(name)}", timeout=300)

    def start_hand_made(self, conn: HostSession, name: str) -> None:
        conn.check(f"docker start {shlex.quote(name)}", timeout=300)

    def remove_hand_made(self, conn: HostSession, name: str) -> None:
        conn.check(f"docker rm {shlex.quote(name)}", timeout=300)


COMPOSE_ADAPTER = ComposeAdapter()
