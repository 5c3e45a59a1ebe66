"""The `fleet` command line against fake hosts: a fleet repository in Git, run in-process.

`FakeFleet` is what tests/integration/helpers.py's `FleetRepo` is for the lab, without
the lab: a temporary Git repository holding a copy of desired/ (the example fleet, or a
few of its seats), and `fleet(...)` runs the real command line (`reconciler.cli.run`:
its option parsing, its one error boundary, its exit codes) with a `CliContext` whose
sessions are `tests.fakes.host.FakeHost`s (tower, rig and the gateway host) and whose
clock is a `FakeClock`. What needs a real sshd, Docker, compose or LiteLLM stays in the lab.
"""

from __future__ import annotations

import io
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import git
from ruamel.yaml import YAML

from fleet.gateways.litellm.render import render_gateway_config
from fleet.runtimes.compose import render_compose
from fleet.spec.load import load_fleet
from fleet.spec.models import DesiredFleet
from reconciler.cli import run
from reconciler.cli.app import CliContext
from reconciler.cli.output import Output
from reconciler.host import Sessions
from tests.fakes.clock import FakeClock
from tests.fakes.gateway import FakeGateway
from tests.fakes.host import FakeHost, FakeSessions

DESIRED = Path(__file__).resolve().parents[3] / "desired"
SMALL = ("coder", "embed", "reason", "llama8b")  # as the lab's small fleet
GATEWAY_CONFIG = "/etc/litellm/config.yaml"
COMPOSE = "/srv/fleet/compose.yaml"
MASTER_KEY = {"LITELLM_MASTER_KEY": "sk-fake-master-key"}
# a hand-kept proxy config before fleet manages it: one foreign entry, which stays
FOREIGN_GATEWAY = """\
model_list:
  # cloud overflow, not ours
  - model_name: gpt-4o-mini
    litellm_params:
      model: openai/gpt-4o-mini
      api_key: os.environ/OPENAI_API_KEY
"""


@dataclass(frozen=True)
class Result:
    """How one command line ended: its exit code and what it printed."""

    returncode: int
    stdout: str
    stderr: str


@dataclass
class FakeFleet:
    """A fleet repository and the fake hosts its commands reach."""

    root: Path
    hosts: dict[str, FakeHost] = field(
        default_factory=lambda: {
            "tower": FakeHost("tower", gpus=4),
            "rig": FakeHost("rig", gpus=2),
            "gateway": FakeHost("gateway", gpus=0),
        }
    )
    unreachable: dict[str, str] = field(default_factory=dict)
    clock: FakeClock = field(default_factory=FakeClock)
    front: FakeGateway | None = None  # the gateway host's proxies and front, if it has one

    @property
    def desired(self) -> Path:
        return self.root / "desired"

    def load(self) -> DesiredFleet:
        files = {
            p.relative_to(self.desired).as_posix(): p.read_text()
            for p in self.desired.rglob("*.yaml")
        }
        loaded = load_fleet(files)
        assert loaded.fleet is not None, loaded.problems
        return loaded.fleet

    @contextmanager
    def sessions(self, desired: DesiredFleet, *, warm: bool = False) -> Iterator[Sessions]:
        yield FakeSessions(self.hosts, self.unreachable)

    def fleet(self, *args: str) -> Result:
        """Run `fleet ARGS --desired <this repository's desired/>`."""
        out, err = io.StringIO(), io.StringIO()
        context = CliContext(Output(out, err), self.sessions, self.clock)
        code = run([*args, "--desired", str(self.desired)], context)
        return Result(code, out.getvalue(), err.getvalue())

    def edit(self, rel: str, old: str, new: str) -> None:
        """Change a desired/ file and commit it, as a merged pull request would."""
        path = self.desired / rel
        text = path.read_text()
        assert old in text, f"{old!r} not in {rel}"
        path.write_text(text.replace(old, new, 1))
        self.commit(f"edit {rel}")

    def commit(self, message: str) -> None:
        repo = git.Repo(self.root)
        repo.git.add("-A")
        repo.git.commit("-m", message, "--allow-empty")

    def deploy(self, host: str) -> None:
        """Start a host's seats from fleet's own compose file, as the lab's `deploy` does."""
        fake = self.hosts[host]
        text = render_compose(self.load(), host)
        fake.files[COMPOSE] = text
        for service in YAML(typ="safe").load(text)["services"]:
            assert fake.compose_up(f"fleet-{host}", COMPOSE, str(service)).exit_status == 0

    def route_gateway(self) -> None:
        """The gateway config routes every alias of desired/, as after an apply."""
        gateway = self.hosts["gateway"]
        current = gateway.files[GATEWAY_CONFIG]
        gateway.files[GATEWAY_CONFIG] = render_gateway_config(current, self.load())
        if self.front is not None and self.front.host is gateway:
            self.front.load_file()


def make_fleet(
    path: Path,
    seats: tuple[str, ...] | None = SMALL,
    source: Path = DESIRED,
    hosts: dict[str, FakeHost] | None = None,
) -> FakeFleet:
    """A Git repository whose desired/ is the example fleet (or `source`, on those fake
    `hosts`), limited to `seats`; the hosts run nothing and the gateway config has no
    entry of fleet's yet."""
    root = path / "fleet-repo"
    shutil.copytree(source, root / "desired")
    if seats is not None:
        for seat_file in (root / "desired" / "seats").glob("*.yaml"):
            if seat_file.stem not in seats:
                seat_file.unlink()
        _prune_gateway(root / "desired", seats)
    repo = git.Repo.init(root)
    with repo.config_writer() as config:
        config.set_value("user", "name", "fleet tests")
        config.set_value("user", "email", "tests@fleet.invalid")
    fake = FakeFleet(root=root) if hosts is None else FakeFleet(root=root, hosts=hosts)
    fake.hosts["gateway"].files[GATEWAY_CONFIG] = FOREIGN_GATEWAY
    fake.commit("desired fleet")
    gateway = fake.load().gateway
    if gateway is not None and gateway.front is not None and not fake.hosts["gateway"].commands:
        # the gateway host runs its proxies behind the front, as the lab's does
        fake.front = FakeGateway(gateway, FOREIGN_GATEWAY, fake.clock)
        fake.front.host.files.update(fake.hosts["gateway"].files)
        fake.hosts["gateway"] = fake.front.host
    return fake


def _prune_gateway(desired: Path, seats: tuple[str, ...]) -> None:
    """Drop gateway params and fallbacks that name aliases of seats left out."""
    yaml = YAML()
    aliases = {a for s in seats for a in yaml.load(desired / "seats" / f"{s}.yaml")["aliases"]}
    path = desired / "gateway.yaml"
    gateway = yaml.load(path)
    for key in ("alias_params", "fallbacks"):
        for alias in [a for a in gateway.get(key, {}) if a not in aliases]:
            del gateway[key][alias]
    yaml.dump(gateway, path)
