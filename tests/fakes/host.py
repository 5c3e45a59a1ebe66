"""`FakeHost`: an in-memory `reconciler.host.HostSession`, so the workflows run without SSH.

The idea is httpx's MockTransport: a fake at our own seam, not a mock of paramiko. A fake
host keeps its files in a dict, journals every operation like `HostConnection.journal`,
and answers exactly the commands fleet issues through a table of handlers (regex ->
function): the apply lock, `rm -f`, the journal's append, `mkdir -p`, one compose service
`up -d --no-deps` / `rm --stop --force`, `docker ps` for a seat's port, `docker restart`
and the fact script (`sh -s`, answered by `tests.fakes.containers.fact_output`, with each
seat port's /metrics where `fleet status` asks for them), systemd's
`systemctl` / `journalctl` (`tests.fakes.systemctl`) and the units' part of the fact
script (`tests.fakes.units`: unit files in `files`, what systemd runs in `systemd`),
plus what a test registers in `commands` (by prefix; `tests.fakes.gateway` does). Any
other command raises AssertionError naming it, so a test sees a new command at once.
`ggufs` are the GGUF files the fact script finds (path -> size and head), `docker=False`
a host without Docker.

`open_tcp` serves HTTP: what the test registered with `serve` for (address, port, path),
else, when a running container publishes that port, what a healthy engine of its kind
answers (`tests.fakes.engines`: /health 200, /v1/models listing its served name, /metrics
with its own gauge at no request running); a port that has neither is refused
(HostUnreachable, worded as the SSH adapter words it).

A test makes a step fail with `fail_on` (a command or `write PATH` containing the key
fails, every time, with the value as stderr or `exit N: stderr`), makes the next start
of a service crash with `crashes` (the container exits 1 with that line in its log) or
lose a flag with `drops_arg` (its process runs without that flag and its value, as behind
an entrypoint wrapper that loses an argument), and names paths that do not exist on the
host with `missing` (model directories the fact script looks for). Model weights, a store
and the hub are `tests.fakes.models`'. `FakeSessions` hands
out the fake hosts by name; a host in its `unreachable` cannot be connected to.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

import yaml  # type: ignore[import-untyped]

from fleet.errors import HostError, HostUnreachable
from fleet.facts.script import MARK
from fleet.names import SEAT_LABEL
from reconciler.host import CommandResult, checked
from tests.fakes import models as fake_models
from tests.fakes.channel import FakeChannel, Reply
from tests.fakes.containers import FakeContainer, fact_output
from tests.fakes.engines import engine_log, idle_metrics, served_name
from tests.fakes.models import FakeStore
from tests.fakes.systemctl import SYSTEMD_COMMANDS
from tests.fakes.units import FakeSystemd, processes, unit_sections

Handler = Callable[["FakeHost", list[str], str | None], CommandResult]

_WORD = r"""((?:'[^']*'|"[^"]*"|[^\s'"<>|&;()])+)"""
OK = CommandResult(0, "", "")


@dataclass
class FakeHost:
    """One host in memory; see the module docstring for what it answers."""

    name: str
    files: dict[str, str] = field(default_factory=dict)
    gpus: int = 4
    fail_on: dict[str, str] = field(default_factory=dict)
    crashes: dict[str, str] = field(default_factory=dict)
    drops_arg: dict[str, str] = field(default_factory=dict)
    missing: set[str] = field(default_factory=set)
    journal: list[tuple[str, str]] = field(default_factory=list)
    scripts: list[str] = field(default_factory=list)  # every fact script sent to `sh -s`
    before_up: Callable[[str], None] | None = None  # called with the service compose starts
    modes: dict[str, int] = field(default_factory=dict)
    directories: set[str] = field(default_factory=set)
    containers: dict[str, FakeContainer] = field(default_factory=dict)
    started: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    routes: dict[tuple[str, int], dict[str, list[Reply]]] = field(default_factory=dict)
    commands: dict[str, Callable[[str], CommandResult]] = field(default_factory=dict)
    models: dict[str, dict[str, int]] = field(default_factory=dict)  # tests.fakes.models
    partial: dict[str, dict[str, int]] = field(default_factory=dict)
    accessed: dict[str, float] = field(default_factory=dict)
    modified: dict[tuple[str, str], str] = field(default_factory=dict)  # (model, file) -> mtime
    corrupt: set[tuple[str, str]] = field(default_factory=set)  # (model, file): other bytes
    disk_free: int = 2 * 10**12
    stores: dict[str, FakeStore] = field(default_factory=dict)
    hub: dict[str, dict[str, int]] = field(default_factory=dict)
    has_hf: bool = True
    tokens: list[str] = field(default_factory=list)
    copy_limit: int | None = None
    copied: list[str] = field(default_factory=list)
    systemd: FakeSystemd = field(default_factory=FakeSystemd)
    ggufs: dict[str, tuple[int, bytes]] = field(default_factory=dict)  # path -> size, head
    docker: bool = True  # False: a host without Docker (its engines run as systemd units)
    _pids: int = 4000

    def run(
        self, command: str, *, stdin: str | None = None, timeout: float | None = None
    ) -> CommandResult:
        self.journal.append(("exec", command))
        if failure := self._failure(command):
            return failure
        for prefix, answer in self.commands.items():  # a test's own commands (a gateway's)
            if command.startswith(prefix):
                return answer(command)
        if fake_models.handles(self, command):
            return fake_models.run(self, command, stdin)
        for pattern, handler in HANDLERS:
            if match := pattern.fullmatch(command):
                words = [shlex.split(w)[0] if w else "" for w in match.groups()]
                return handler(self, words, stdin)
        raise AssertionError(f"FakeHost {self.name}: no handler for command: {command}")

    def check(self, command: str, *, stdin: str | None = None, timeout: float | None = None) -> str:
        return checked(self.name, command, self.run(command, stdin=stdin, timeout=timeout))

    def read_file(self, path: str) -> str | None:
        self.journal.append(("sftp-read", path))
        return self.files.get(path)

    def write_file_atomic(
        self, path: str, text: str, mode: int | None = None, *, mode_of: str | None = None
    ) -> None:
        self.journal.append(("sftp-write", path))
        if failure := self._failure(f"write {path}"):
            raise HostError(f"cannot write {path}: {failure.stderr}", where=self.name)
        kept = self.modes.get(mode_of or path, 0o644) if (mode_of or path) in self.files else 0o644
        self.files[path], self.modes[path] = text, kept if mode is None else mode

    def open_tcp(self, address: str, port: int, timeout: float = 5.0) -> FakeChannel:
        self.journal.append(("tcp", f"{address}:{port}"))
        engine = self._engine_routes(address, port)
        registered = self.routes.get((address, port))
        if engine is None and registered is None:
            raise HostUnreachable(
                f"connection to {address}:{port} refused (from {self.name})", where=self.name
            )
        return FakeChannel({**(engine or {}), **(registered or {})})

    def serve(self, address: str, port: int, path: str, *replies: Reply) -> None:
        """Answer GET/POST `path` on address:port with these replies in turn (the last
        one repeats)."""
        self.routes.setdefault((address, port), {})[path] = list(replies)

    def compose_up(self, project: str, compose_file: str, service: str) -> CommandResult:
        """(Re)create one service's container from the compose file, as compose would."""
        text = self.files.get(compose_file)
        if text is None:
            return CommandResult(1, "", f"open {compose_file}: no such file or directory")
        # libyaml, as compose's own Go parser reads it: ruamel's round trip is 20x slower
        tree = yaml.load(text, Loader=yaml.CSafeLoader) or {}
        definition = (tree.get("services") or {}).get(service)
        if definition is None:
            return CommandResult(1, "", f"no such service: {service}")
        if self.before_up is not None:
            self.before_up(service)
        self._pids += 100
        crash = self.crashes.pop(service, None)
        container = FakeContainer(
            id=hashlib.sha256(f"{self.name}/{service}/{self._pids}".encode()).hexdigest(),
            name=f"{project}-{service}-1",
            service=service,
            definition=json.loads(json.dumps(definition)),
            pid=self._pids,
            state="exited" if crash else "running",
            exit_code=1 if crash else 0,
            dropped=self.drops_arg.pop(service, None),
        )
        container.log = f"{crash}\n" if crash else engine_log(container.argv)
        self.containers[service] = container
        self.started.append(service)
        return OK

    def _engine_routes(self, address: str, port: int) -> dict[str, list[Reply]] | None:
        for container in self.containers.values():
            for bound, published, _ in container.ports:
                if container.running and published == port and bound in (address, "0.0.0.0"):
                    return _engine_replies(container.argv, container.service)
        for unit in self.systemd.units.values():  # a unit's engine listens on its --port
            if unit.running and f"--port {port}" in " ".join(unit.argv):
                return _engine_replies(unit.argv, unit.seat)
        return None

    def _failure(self, operation: str) -> CommandResult | None:
        for key, message in self.fail_on.items():
            if key in operation:
                status, _, stderr = message.partition(": ")
                if re.fullmatch(r"exit \d+", status):
                    return CommandResult(int(status.split()[1]), "", stderr)
                return CommandResult(1, "", message)
        return None


def _engine_replies(argv: list[str], seat: str) -> dict[str, list[Reply]]:
    """What a healthy engine started with `argv` answers."""
    name = served_name(argv, seat)
    models = {"object": "list", "data": [{"id": name, "object": "model"}]}
    return {
        "/health": [Reply(200)],
        "/v1/models": [Reply(200, json.dumps(models))],
        "/metrics": [Reply(200, idle_metrics(argv, name))],
    }


@dataclass
class FakeSessions:
    """`reconciler.host.Sessions` over fake hosts, by name; `unreachable` hosts raise
    HostUnreachable with their message, as the SSH adapter does for a host it cannot reach."""

    hosts: dict[str, FakeHost]
    unreachable: dict[str, str] = field(default_factory=dict)

    def get(self, host: str) -> FakeHost:
        if host in self.unreachable:
            raise HostUnreachable(self.unreachable[host], where=host)
        if host not in self.hosts:
            raise AssertionError(f"FakeSessions: no fake host named {host!r}")
        return self.hosts[host]


def _lock(host: FakeHost, words: list[str], _: str | None) -> CommandResult:
    """`reconciler.workflows.locks.lock_command`: exit 3 when the lock exists."""
    directory, holder, temporary = words
    path = re.sub(r"\.\d+\.tmp$", "", temporary)
    if path in host.files:
        return CommandResult(3, "", "")
    host.directories.add(directory)
    host.files[path] = holder + "\n"
    return OK


def _drop_if(host: FakeHost, words: list[str], _: str | None) -> CommandResult:
    """`[ "$(cat PATH)" = TEXT ] && rm -f PATH`: remove a file that still says TEXT."""
    path, text, _path = words
    if host.files.get(path, "").rstrip("\n") != text:
        return CommandResult(1, "", "")
    del host.files[path]
    return OK


def _rm(host: FakeHost, words: list[str], _: str | None) -> CommandResult:
    host.files.pop(words[0], None)
    return OK


def _append(host: FakeHost, words: list[str], _: str | None) -> CommandResult:
    line, path = words
    host.files[path] = host.files.get(path, "") + line + "\n"
    return OK


def _mkdir(host: FakeHost, words: list[str], _: str | None) -> CommandResult:
    host.directories.add(words[0])
    return OK


def _compose(host: FakeHost, words: list[str], _: str | None) -> CommandResult:
    project, compose_file, verb, service = words
    if verb == "up":
        return host.compose_up(project, compose_file, service)
    if host.containers.pop(service, None) is not None:
        host.removed.append(service)
    return OK


def _ps_ports(host: FakeHost, words: list[str], _: str | None) -> CommandResult:
    seat = words[0].removeprefix(f"label={SEAT_LABEL}=")
    rows = [c.ps_ports() for c in host.containers.values() if c.running and c.seat() == seat]
    return CommandResult(0, "".join(f"{row}\n" for row in rows), "")


def _by_hand(host: FakeHost, words: list[str], _: str | None) -> CommandResult:
    """`docker stop|start|rm NAME` on a container found by its name."""
    verb, name = words
    key = next((k for k, c in host.containers.items() if c.name == name), None)
    if key is None:
        return CommandResult(1, "", f"Error response from daemon: No such container: {name}")
    host.journal.append((f"docker-{verb}", name))
    if verb == "rm":
        del host.containers[key]
    else:
        host.containers[key].state = "running" if verb == "start" else "exited"
    return OK


def _restart(host: FakeHost, words: list[str], _: str | None) -> CommandResult:
    return OK


def _facts(host: FakeHost, _: list[str], stdin: str | None) -> CommandResult:
    assert stdin and MARK.strip() in stdin, "sh -s without the fact script on stdin"
    host.scripts.append(stdin)
    containers = host.containers
    if match := re.search(r"--filter 'label=fleet\.seat=([^']+)'", stdin):
        containers = {k: c for k, c in containers.items() if c.seat() == match.group(1)}
    found = re.search(r"printf '\\n(@@FLEET\S* )%s", stdin)
    mark = found.group(1) if found else MARK  # as the script's `mark` prints a section
    units = unit_sections(host, stdin, mark) if "mark systemd-rc" in stdin else []
    output = fact_output(
        containers,
        host.gpus,
        host.files,
        host.missing - set(host.models),
        processes(host),
        units,
        host.ggufs,
        host.docker,
        mark,
    )
    models = "\n".join(fake_models.model_sections(host, stdin, mark))
    models += "\n" + "\n".join(_metrics_sections(host, stdin, mark)) + f"\n{mark}end\n"
    return CommandResult(0, output.replace(f"{mark}end\n", models), "")


def _metrics_sections(host: FakeHost, stdin: str, mark: str) -> list[str]:
    """`fleet status`'s part of the script: each port's /metrics as its engine answers it
    (an engine's, else what the test `serve`d there), nothing where nothing listens."""
    sections = []
    urls = re.findall(r"http://([^:\s'/]+):(\d+)/metrics", stdin)
    for address, port in dict.fromkeys(urls):
        routes = host._engine_routes(address, int(port)) or {}
        routes = {**routes, **host.routes.get((address, int(port)), {})}
        replies = routes.get("/metrics")
        sections.append(f"{mark}metrics {port}")
        if replies and replies[0].status == 200:
            sections.append(replies[0].body)
    return sections


def _pattern(template: str) -> re.Pattern[str]:
    return re.compile(template.replace("WORD", _WORD))


HANDLERS: list[tuple[re.Pattern[str], Handler]] = [
    (_pattern(r"mkdir -p WORD && \{ printf '%s\\n' WORD > WORD \|\| .*"), _lock),
    (_pattern(r"\[ \"\$\(cat WORD\)\" = WORD \] && rm -f WORD"), _drop_if),
    (_pattern(r"rm -f WORD"), _rm),
    (_pattern(r"printf '%s\\n' WORD >> WORD"), _append),
    (_pattern(r"mkdir -p WORD"), _mkdir),
    (
        _pattern(r"docker compose -p WORD -f WORD (up -d --no-deps|rm --stop --force) WORD"),
        _compose,
    ),
    (_pattern(r"docker ps --filter WORD --format '\{\{\.Ports\}\}'"), _ps_ports),
    (_pattern(r"docker restart WORD"), _restart),
    (_pattern(r"docker (stop|start|rm) WORD"), _by_hand),
    (_pattern(r"sh -s"), _facts),
    *((_pattern(template), handler) for template, handler in SYSTEMD_COMMANDS),
]
