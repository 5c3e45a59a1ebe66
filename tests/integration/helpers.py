"""Helpers of the lab integration tests: a fleet repository in Git, and the real CLI.

The tests run `python -m reconciler ...` (the `fleet` command) in a temporary Git
repository holding a copy of desired/, against the lab, exactly as an operator would.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import git

from fleet.errors import HostUnreachable
from fleet.runtimes.compose import render_compose
from fleet.spec.load import load_fleet
from fleet.spec.models import DesiredFleet
from fleet.yamltext import dump_yaml, make_yaml
from reconciler.adapters.http import HttpReply
from tests.lab.lab import Lab

DESIRED = Path(__file__).resolve().parents[2] / "desired"
SMALL = ("coder", "embed", "reason", "llama8b")  # a seat on every GPU of tower, TP=2 on 2+3


@dataclass
class FleetRepo:
    """A fleet repository in Git, and the lab it runs against."""

    root: Path
    lab: Lab

    @property
    def desired(self) -> Path:
        return self.root / "desired"

    def fleet(
        self, *args: str, timeout: float = 900, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """Run the fleet command line here."""
        environment = {**os.environ, **self.lab.env(), **(env or {})}
        environment.pop("FLEET_DESIRED", None)
        return subprocess.run(
            [sys.executable, "-m", "reconciler", *args],
            cwd=self.root,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=environment,
            stdin=subprocess.DEVNULL,
        )

    def load(self) -> DesiredFleet:
        files = {
            p.relative_to(self.desired).as_posix(): p.read_text()
            for p in self.desired.rglob("*.yaml")
        }
        loaded = load_fleet(files)
        assert loaded.fleet is not None, loaded.problems
        return loaded.fleet

    def edit(self, rel: str, old: str, new: str, message: str | None = None) -> None:
        """Change a desired/ file (and commit it, as a merged PR would)."""
        path = self.desired / rel
        text = path.read_text()
        assert old in text, f"{old!r} not in {rel}"
        path.write_text(text.replace(old, new, 1))
        self.commit(message or f"edit {rel}")

    def remove(self, rel: str) -> None:
        (self.desired / rel).unlink()
        self.commit(f"remove {rel}")

    def commit(self, message: str) -> None:
        repo = git.Repo(self.root)
        repo.git.add("-A")
        repo.git.commit("-m", message, "--allow-empty")

    def deploy(self, host: str) -> None:
        """Start a host's seats with real compose from fleet's own rendering (no apply)."""
        text = render_compose(self.load(), host)
        result = self.lab.compose_up(host, f"fleet-{host}", text)
        assert result.returncode == 0, result.stderr


def _prune_gateway(desired: Path) -> None:
    """Drop gateway params and fallbacks that name aliases of seats left out (as keys or in
    a fallback's chain), and those aliases from the clients that may call them (a client
    left with none goes)."""
    yaml = make_yaml()
    aliases = {
        a
        for f in (desired / "seats").glob("*.yaml")
        for a in (yaml.load(f.read_text()).get("aliases") or [])
    }
    path = desired / "gateway.yaml"
    gateway = yaml.load(path.read_text())
    for key in ("alias_params", "fallbacks"):
        for alias in [a for a in gateway.get(key, {}) if a not in aliases]:
            del gateway[key][alias]
    fallbacks = gateway.get("fallbacks") or {}
    for alias, chain in list(fallbacks.items()):
        fallbacks[alias] = [a for a in chain if a in aliases]
        if not fallbacks[alias]:
            del fallbacks[alias]
    clients = gateway.get("clients") or {}
    for name, client in list(clients.items()):
        allowed = client.get("aliases")
        if isinstance(allowed, list):
            client["aliases"] = [a for a in allowed if a in aliases]
            if not client["aliases"]:
                del clients[name]
    if "clients" in gateway and not clients:
        del gateway["clients"]
    path.write_text(dump_yaml(gateway))


def drop_front(repo: FleetRepo) -> None:
    """Remove the front from gateway.yaml (committed): the proxy then restarts in place."""
    text = (repo.desired / "gateway.yaml").read_text()
    block = re.search(r"^front:.*\n(?:[ #].*\n)*", text, re.MULTILINE)
    assert block is not None
    repo.edit("gateway.yaml", block.group(0), "", "gateway without a front")


def make_repo(path: Path, lab: Lab, seats: tuple[str, ...] | None = SMALL) -> FleetRepo:
    """A Git repository whose desired/ is the example fleet, limited to `seats`, with the
    example's host addresses replaced by the lab's."""
    root = path / "fleet-repo"
    shutil.copytree(DESIRED, root / "desired")
    lab.rewrite_desired(root / "desired")
    if seats is not None:
        for seat_file in (root / "desired" / "seats").glob("*.yaml"):
            if seat_file.stem not in seats:
                seat_file.unlink()
        _prune_gateway(root / "desired")
    repo = git.Repo.init(root)
    with repo.config_writer() as config:
        config.set_value("user", "name", "fleet tests")
        config.set_value("user", "email", "tests@fleet.invalid")
    fleet_repo = FleetRepo(root=root, lab=lab)
    fleet_repo.commit("desired fleet")
    return fleet_repo


def apply(repo: FleetRepo, *args: str) -> str:
    result = repo.fleet("apply", "--auto-approve", "--timeout", "120", *args)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def argv_of(lab: Lab, host: str, seat: str) -> list[str]:
    result = lab.docker(host, "inspect", f"fleet-{host}-{seat}-1")
    data = json.loads(result.stdout)[0]
    return [data["Path"], *data["Args"]]


def chat(lab: Lab, alias: str) -> tuple[int, str]:
    reply = request_url(
        f"{lab.gateway_url}/v1/chat/completions",
        method="POST",
        headers={"Authorization": f"Bearer {lab.master_key}"},
        body={
            "model": alias,
            "max_tokens": 8,
            "messages": [{"role": "user", "content": "who are you?"}],
        },
    )
    if reply.status != 200:
        return reply.status, reply.body
    return reply.status, json.dumps(reply.json())


def request_url(
    url: str,
    method: str = "GET",
    body: Any = None,
    headers: dict[str, str] | None = None,
    timeout: float = 30.0,
) -> HttpReply:
    """One request straight from this machine (the gateway URL, an engine the lab runs
    here)."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(
        url,
        data=data,
        method=method,
        headers={"Content-Type": "application/json", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return HttpReply(reply.status, reply.read().decode(errors="replace"))
    except urllib.error.HTTPError as err:
        return HttpReply(err.code, err.read().decode(errors="replace"))
    except (urllib.error.URLError, OSError) as err:
        raise HostUnreachable(f"{url} does not answer: {err}") from err
