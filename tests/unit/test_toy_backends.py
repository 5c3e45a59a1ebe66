"""The seams hold: a toy engine, a toy host runtime and a toy gateway kind, each defined in
this module alone and added through the public `register` functions, go through validate,
plan, apply, inventory and drift on a fake host, with no other file of fleet changed.

The toy world is as small as it can be: the engine is a program `toy-llm` whose log says
how many tokens its cache holds (`toy_contexts` times the context: a seat key the engine
owns); the runtime (`toybox`) keeps each seat's definition as JSON under its own `toy_dir`
(a host setting it owns) and runs it with `toyctl`; the gateway kind (`toygate`) routes
aliases through a JSON config and reloads with a command.
`ToyHost` is the fake host with those two commands and the toy runtime's fact section.
Whatever this module had to edit elsewhere would be where a seam leaks.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import git
import pytest
from pydantic import Field

import fleet.engines
import fleet.gateways
import reconciler.runtimes
from fleet.engines import EngineBase, MetricNames
from fleet.engines.base import SeatLine, Shape
from fleet.engines.report import EngineReport
from fleet.facts.argv import EngineArgs
from fleet.facts.instance import Instance
from fleet.facts.script import Fact, FactOutput, Parts
from fleet.gateways import GatewayKindBase
from fleet.names import HASH_LABEL, MANAGED_LABEL, SEAT_LABEL, entry_id, entry_seat
from fleet.observed.gateway_config import GatewayConfig, GatewayEntry
from fleet.observed.models import Observation
from fleet.runtimes.base import Runtime, RuntimeBase, SeatInstances
from fleet.spec.host_settings import RuntimeSettings
from fleet.spec.load import Sources
from fleet.spec.models import DesiredFleet, Host, Seat
from fleet.spec.problems import Problem
from fleet.spec.seat_budget import SeatBudget
from fleet.spec.seat_rules import seat_file
from reconciler.host import CommandResult, HostSession
from reconciler.runtimes.base import Snapshot
from tests.fakes.channel import Reply
from tests.fakes.host import FakeHost
from tests.unit.cli.fake_fleet import FakeFleet

# ---------------------------------------------------------------- the toy engine


class ToyBudget(SeatBudget):
    """A toy seat's own key: how many contexts the toy's cache holds."""

    toy_contexts: int = Field(2, ge=1, description="Contexts the toy's cache holds.")


class ToyEngine(EngineBase):
    """`toy-llm --model M --name N --port P --context C`; its log says its cache's tokens."""

    NAME = "toyllm"
    LABEL = "ToyLLM"
    DEFAULT_PORT = 7000
    COMPARED: tuple[str, ...] = ("model", "served_names", "port", "context")
    METRICS = MetricNames(running=("toy:running",))
    BUDGET: type[SeatBudget] = ToyBudget
    KV_SIZING = "the toy holds toy_contexts contexts"
    RUNS_ON_CPU = True
    EXECUTABLE = r"[^ ]*toy-llm"

    def detect(self, tokens: list[str]) -> int | None:
        return 1 if tokens and tokens[0].endswith("toy-llm") else None

    def parse_args(self, engine: str, program: list[str], rest: list[str]) -> EngineArgs:
        flags = dict(zip(rest[::2], rest[1::2], strict=False))
        return EngineArgs(
            engine=engine,
            program=tuple(program),
            model=flags.get("--model"),
            served_model_names=(flags["--name"],) if "--name" in flags else (),
            port=int(flags["--port"]) if "--port" in flags else None,
            max_model_len=int(flags["--context"]) if "--context" in flags else None,
        )

    def entrypoint(self, seat: Seat) -> list[str]:
        return [seat.image]

    def render_args(self, seat: Seat) -> list[str]:
        args = ["--model", seat.model, "--name", seat.served_name, "--port", str(seat.port)]
        return [*args, "--context", str(seat.context)]

    def healthcheck(self, seat: Seat) -> list[str]:
        return ["CMD", "true"]

    def desired_shape(self, seat: Seat) -> Shape:
        shape = {"model": seat.model, "served_names": [seat.served_name], "port": seat.port}
        return {**shape, "context": seat.context}

    def observed_shape(self, args: EngineArgs) -> Shape:
        shape = {"model": args.model, "served_names": list(args.served_model_names)}
        return {**shape, "port": args.port, "context": args.max_model_len}

    def read_log(self, text: str) -> EngineReport:
        found = re.search(r"toy cache holds (\d+) tokens", text)
        return EngineReport(kv_cache_tokens=int(found.group(1))) if found else EngineReport()

    def check_seat(self, seat: Seat, src: Sources) -> Iterator[Problem]:
        if seat.gpus:
            yield src.problem(seat_file(seat), ("gpus",), "the toy runs on the CPU only")

    def import_lines(self, args: EngineArgs) -> list[SeatLine]:
        return []

    def fixed_kv_tokens(self, seat: Seat) -> int | None:
        budget = seat.budget
        return seat.context * budget.toy_contexts if isinstance(budget, ToyBudget) else None


# ---------------------------------------------------------------- the toy runtime

TOY_DIR = "/var/toy"


class ToySettings(RuntimeSettings):
    """A toybox host's own key."""

    toy_dir: str = TOY_DIR


def _toys(parts: Parts) -> SeatInstances:
    instances, logs, definitions = [], {}, {}
    for name, body in sorted(parts["toy"].items()):
        proc = json.loads(body)
        instances.append(Instance(id=name, name=name, state="running", **proc["instance"]))
        logs[name] = proc["log"]
    for name, body in parts["toy-definition"].items():
        definitions[name] = json.loads(body)
    return SeatInstances(instances=tuple(instances), logs=logs, definitions=definitions)


TOY_FACT: Fact[SeatInstances] = Fact(
    name="toy",
    command=lambda selector: f"toyctl facts {selector}",
    sections=("toy", "toy-definition"),
    process=_toys,
    default=SeatInstances(),
)


class ToyRuntime(RuntimeBase):
    """Seats as toys: a JSON definition each, run by `toyctl`."""

    NAME = "toybox"
    SETTINGS: type[RuntimeSettings] = ToySettings
    DEFINITION = "toy definition"
    RESTORED = "toy definitions"
    MANAGED_BY = "fleet's toys"

    def host_facts(self, host: Host) -> tuple[str, ...]:
        return (TOY_FACT.entry("all"),)

    def seat_facts(self, host: Host, seat: str) -> tuple[str, ...]:
        return (TOY_FACT.entry(shlex.quote(seat)),)

    def read_seats(self, output: FactOutput) -> SeatInstances:
        return output[TOY_FACT]

    def owner(self, cgroup: str) -> str | None:
        return None

    def render_seat(self, seat: Seat, host: Host) -> dict[str, Any]:
        engine = fleet.engines.engine_for(seat.engine)
        body = {"argv": [*engine.entrypoint(seat), *engine.render_args(seat)], "image": seat.image}
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:12]
        labels = {MANAGED_LABEL: "true", SEAT_LABEL: seat.name, HASH_LABEL: digest}
        return {**body, "labels": labels}

    def render_host(self, desired: DesiredFleet, host_name: str) -> str:
        host = desired.hosts[host_name]
        seats = {s.name: self.render_seat(s, host) for s in desired.seats_on(host_name)}
        return json.dumps(seats, indent=2, sort_keys=True) + "\n"


class ToyAdapter:
    """What the toy runtime does on a host: definitions as files, `toyctl` for the rest."""

    runtime: Runtime = ToyRuntime()

    def describe(self, host: Host) -> str:
        return f"{_toy_dir(host)}/*.json"

    def snapshot(self, conn: HostSession, host: Host) -> Snapshot:
        names = conn.run(f"toyctl ls {_toy_dir(host)}").stdout.split()
        found = {n: conn.read_file(f"{_toy_dir(host)}/{n}.json") for n in names}
        return json.dumps(found, sort_keys=True) if found else None

    def write_seats(
        self,
        conn: HostSession,
        desired: DesiredFleet,
        host: Host,
        previous: Snapshot,
        changes: dict[str, dict[str, Any] | None],
    ) -> None:
        for name, definition in sorted(changes.items()):
            path = f"{_toy_dir(host)}/{name}.json"
            if definition is None:
                conn.check(f"rm -f {shlex.quote(path)}")
            else:
                conn.write_file_atomic(path, json.dumps(definition, sort_keys=True))

    def restore(self, conn: HostSession, host: Host, previous: Snapshot) -> None:
        for name, text in (json.loads(previous) if previous else {}).items():
            conn.write_file_atomic(f"{_toy_dir(host)}/{name}.json", text)

    def start_seat(self, conn: HostSession, desired: DesiredFleet, host: Host, seat: str) -> None:
        conn.check(f"toyctl start {_toy_dir(host)} {shlex.quote(seat)}")

    def remove_seat(self, conn: HostSession, desired: DesiredFleet, host: Host, seat: str) -> None:
        conn.check(f"toyctl stop {_toy_dir(host)} {shlex.quote(seat)}")

    def restart(self, conn: HostSession, host: Host, instance: str) -> None:
        conn.check(self.restart_command(instance))

    def restart_command(self, instance: str) -> str:
        return f"toyctl restart {shlex.quote(instance)}"

    def read_log(self, conn: HostSession, instance: str, since: str, lines: int) -> str:
        return conn.run(f"toyctl log {shlex.quote(instance)}").stdout

    def port_of(self, conn: HostSession, host: Host, seat: str) -> int | None:
        return None

    def port_in(self, previous: Snapshot, seat: str) -> int | None:
        return None


def _toy_dir(host: Host) -> str:
    settings = host.settings
    return settings.toy_dir if isinstance(settings, ToySettings) else TOY_DIR


@dataclass
class ToyHost(FakeHost):
    """A fake host that runs toys: `toyctl` starts and stops them, and the fact script's
    toy section says what runs (and the definitions fleet wrote)."""

    toys: dict[str, dict[str, Any]] = field(default_factory=dict)

    def run(
        self, command: str, *, stdin: str | None = None, timeout: float | None = None
    ) -> CommandResult:
        words = shlex.split(command)
        if words[:1] == ["toyctl"]:
            self.journal.append(("exec", command))
            return self._toyctl(words[1], words[2:])
        result = super().run(command, stdin=stdin, timeout=timeout)
        if command == "sh -s" and stdin and "toyctl facts" in stdin:
            selector = re.search(r"toyctl facts (\S+)", stdin)
            only = None if selector is None or selector.group(1) == "all" else selector.group(1)
            ending = re.search(r"(@@FLEET(?:-[A-Za-z0-9]+)? )end\n", result.stdout)
            assert ending is not None, "the fact script's output has no end section"
            mark, end = ending.group(1), ending.group(0)
            sections = self._sections(only, mark)
            return CommandResult(0, result.stdout.replace(end, sections + end), "")
        return result

    def _toyctl(self, verb: str, args: list[str]) -> CommandResult:
        if verb == "ls":
            names = sorted(p.rsplit("/", 1)[1][:-5] for p in self.files if p.startswith(args[0]))
            return CommandResult(0, "\n".join(names), "")
        if verb == "start":
            definition = json.loads(self.files[f"{args[0]}/{args[1]}.json"])
            self.toys[args[1]] = definition
            port = int(definition["argv"][definition["argv"].index("--port") + 1])
            name = definition["argv"][definition["argv"].index("--name") + 1]
            models = json.dumps({"object": "list", "data": [{"id": name}]})
            for address in ("127.0.0.1", "10.0.0.7"):
                self.routes[(address, port)] = {
                    "/health": [Reply(200, "{}")],
                    "/v1/models": [Reply(200, models)],
                }
            return CommandResult(0, "", "")
        if verb == "stop":
            self.toys.pop(args[1], None)
            return CommandResult(0, "", "")
        return CommandResult(0, "", "")

    def _sections(self, only: str | None, mark: str) -> str:
        out = ""
        for name, definition in sorted(self.toys.items()):
            if only is not None and name != only:
                continue
            instance = {
                "image": definition["image"],
                "labels": definition["labels"],
                "argv": definition["argv"],
                "pid": 4242,
            }
            log = "toy-llm: toy cache holds 8192 tokens\n"
            out += f"{mark}toy {name}\n{json.dumps({'instance': instance, 'log': log})}\n"
            out += f"{mark}toy-definition {name}\n{json.dumps(definition)}\n"
        return out


# ---------------------------------------------------------------- the toy gateway kind

GATE_CONFIG = "/etc/toygate.json"


class ToyGate(GatewayKindBase):
    """A proxy whose config is JSON: `{"routes": {alias: {...}}}`."""

    name = "toygate"
    readiness_path = "/ready"
    models_path = "/aliases"

    def parse_config(self, text: str) -> GatewayConfig:
        routes = json.loads(text or "{}").get("routes", {})
        return GatewayConfig(entries=tuple(_gate_entry(a, r) for a, r in sorted(routes.items())))

    def render_config(self, text: str, desired: DesiredFleet, only: frozenset[str]) -> str:
        config = json.loads(text or "{}")
        routes = {
            a: r for a, r in config.get("routes", {}).items() if entry_seat(r.get("id")) is None
        }
        for alias, entry in self.desired_entries(desired, only).items():
            routes[alias] = {
                "id": entry_id(entry.seat or "", alias),
                "to": entry.address,
                "model": entry.model,
                "context": entry.context,
            }
        return json.dumps({**config, "routes": dict(sorted(routes.items()))}, indent=1) + "\n"

    def desired_entries(
        self, desired: DesiredFleet, only: frozenset[str]
    ) -> dict[str, GatewayEntry]:
        found = {}
        for seat in sorted(desired.seats.values(), key=lambda s: s.name):
            address = f"http://{desired.hosts[seat.host].address}:{seat.port}"
            for alias in seat.aliases:
                found[alias] = GatewayEntry(
                    alias=alias,
                    seat=seat.name,
                    address=address,
                    model=seat.served_name,
                    context=seat.context,
                )
        return found

    def listed(self, body: Any) -> set[str]:
        return set(body.get("aliases", [])) if isinstance(body, dict) else set()

    def chat(self, alias: str) -> tuple[str, dict[str, Any]]:
        return "/chat", {"alias": alias}

    def imported_file(
        self,
        gateway: tuple[str, str, str | None],
        address: str,
        where: dict[tuple[str, int], str],
        observation: Observation,
    ) -> tuple[str, dict[str, tuple[str, ...]]]:
        return f"kind: {self.name}\nhost: {gateway[0]}\n", {}


def _gate_entry(alias: str, route: dict[str, Any]) -> GatewayEntry:
    return GatewayEntry(
        alias=alias,
        seat=entry_seat(route.get("id")),
        address=route.get("to"),
        model=route.get("model"),
        context=route.get("context"),
    )


def gate_host() -> FakeHost:
    """The gateway host: `toygate reload` serves the aliases its config routes."""
    host = FakeHost("gate", gpus=0)
    host.files[GATE_CONFIG] = json.dumps({"routes": {}})

    def reload(command: str) -> CommandResult:
        routes = json.loads(host.files[GATE_CONFIG])["routes"]
        aliases = json.dumps({"aliases": sorted(routes)})
        host.routes[("10.0.0.9", 4000)] = {
            "/ready": [Reply(200, "{}")],
            "/aliases": [Reply(200, aliases)],
            "/chat": [Reply(200, "{}")],
        }
        return CommandResult(0, "", "")

    host.commands["toygate reload"] = reload
    reload("")
    return host


# ---------------------------------------------------------------- the fleet

FILES = {
    "fleet.yaml": "name: toys\n",
    "hosts/box.yaml": "ssh: {alias: box}\naddress: 10.0.0.7\nruntime: toybox\n"
    "toy_dir: /var/toy\ngpus: []\n",
    "hosts/gate.yaml": "ssh: {alias: gate}\naddress: 10.0.0.9\n",
    "seats/tiny.yaml": "host: box\ngpus: []\nengine: toyllm\nimage: /opt/toy/bin/toy-llm\n"
    "model: /models/tiny\nserved_name: tiny\ncontext: 4096\nport: 7001\naliases: [tiny]\n"
    "toy_contexts: 2\n",
    "gateway.yaml": "kind: toygate\nhost: gate\nconfig_path: /etc/toygate.json\n"
    "url: http://10.0.0.9:4000\nrestart: {command: toygate reload}\n",
}


@pytest.fixture
def toys(tmp_path: Path) -> Iterator[FakeFleet]:
    """The toy engine, runtime and gateway kind registered, and a fleet that uses them."""
    fleet.engines.register(ToyEngine())
    reconciler.runtimes.register(ToyAdapter())
    fleet.gateways.register(ToyGate())
    root = tmp_path / "fleet-repo"
    for rel, text in FILES.items():
        (root / "desired" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "desired" / rel).write_text(text)
    repo = git.Repo.init(root)
    with repo.config_writer() as config:
        config.set_value("user", "name", "fleet tests")
        config.set_value("user", "email", "tests@fleet.invalid")
    box = ToyHost("box", gpus=0, docker=False, models={"/models/tiny": {"weights.bin": 1024}})
    box.files["/proc/meminfo"] = "MemTotal: 65536000 kB\nMemAvailable: 62000000 kB"
    fake = FakeFleet(root=root, hosts={"box": box, "gate": gate_host()})
    fake.commit("toys")
    try:
        yield fake
    finally:
        fleet.gateways.unregister(ToyGate.name)
        reconciler.runtimes.unregister(ToyRuntime.NAME)
        fleet.engines.unregister(ToyEngine.NAME)


def ok(fake: FakeFleet, *args: str) -> str:
    result = fake.fleet(*args)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_toy_backends_validate_plan_apply_inventory_and_drift(toys: FakeFleet) -> None:
    ok(toys, "validate")
    plan = toys.fleet("plan")
    assert plan.returncode == 2, plan.stdout + plan.stderr
    assert "+ seat tiny on box" in plan.stdout and "+ alias tiny" in plan.stdout
    ok(toys, "apply", "--auto-approve", "--timeout", "60")
    box = toys.hosts["box"]
    assert isinstance(box, ToyHost) and set(box.toys) == {"tiny"}
    assert json.loads(box.files["/var/toy/tiny.json"])["labels"][SEAT_LABEL] == "tiny"
    routes = json.loads(toys.hosts["gate"].files[GATE_CONFIG])["routes"]
    assert routes["tiny"]["to"] == "http://10.0.0.7:7001"
    assert toys.fleet("plan").returncode == 0, "in sync after apply"
    inventory = ok(toys, "inventory")
    assert "tiny" in inventory
    toys.commit("inventory")
    box.toys.clear()  # the toy died: drift
    drift = toys.fleet("check")
    assert drift.returncode == 2 and "seat tiny on box" in drift.stdout, drift.stdout


@pytest.mark.parametrize(
    ("rel", "old", "new", "message"),
    [
        (
            "hosts/box.yaml",
            "toy_dir:",
            "compose_dir:",
            "compose_dir: a setting of compose hosts, not of this toybox host",
        ),
        ("seats/tiny.yaml", "gpus: []", "gpus: [0]", "the toy runs on the CPU only"),
        (
            "seats/tiny.yaml",
            "toy_contexts: 2",
            "kv_cache_bytes: 1GiB",
            "seats/tiny.yaml:10: error: kv_cache_bytes: a setting of vllm seats, not of this "
            "toyllm seat",
        ),
        (
            "seats/tiny.yaml",
            "toy_contexts: 2",
            "toy_context: 2",
            "seats/tiny.yaml:10: error: unknown key 'toy_context' (did you mean 'toy_contexts'?)",
        ),
        ("gateway.yaml", "kind: toygate", "kind: toygait", "kind: expected one of"),
        (
            "gateway.yaml",
            "host: gate",
            "host: gate\nprovider_prefix: openai/",
            "provider_prefix: a setting of litellm gateways, not of this toygate gateway",
        ),
    ],
    ids=[
        "compose-key-on-toy-host",
        "toy-engine-rule",
        "vllm-key-on-toy-seat",
        "toy-seat-key-typo",
        "unknown-kind",
        "litellm-key-on-toy-kind",
    ],
)
def test_toy_backends_own_their_rules(
    toys: FakeFleet, rel: str, old: str, new: str, message: str
) -> None:
    toys.edit(rel, old, new)
    result = toys.fleet("validate")
    assert result.returncode == 1 and message in result.stdout + result.stderr
