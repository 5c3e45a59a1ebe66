"""Gateway changes under client load through the lab's nginx front: no request lost.

One fleet (coder and reason on tower) applied once for the whole module; then, each with
2 clients x 4 requests/s on `chat` and on `coder` through the front (tests/lab/load.py):
a gateway-only change (alias params), a change that adds an alias, a seat change that
recreates (coder pinned to `strategy: recreate`: plan predicted the recreate and its
downtime, and `chat`, a seat nobody touched, loses no request), a change to coder (whose
GPU has room, back to `auto`) plus a new alias that surges it (no request lost on any
alias, plan 0 after), a surge whose new copy fails its gate (rolled back, the old copy
serving throughout), and a new proxy that fails its verification (rolled back, the old
proxy serving throughout). Between the recreate and the surges, SIGTERM sent
to a real `fleet apply` while the new coder loads: rolled back, exit 143, no lock left,
the inventory commit says what was done. Last, a real `fleet apply` killed by its failpoint
during a surge's health gate, then again after writing the gateway config before the
front switched: the next plain apply converges with no unlock, no request lost on `chat`.
Then, with `fallbacks: {coder: [chat]}`, coder recreated while clients and long streams
run on `coder` and `chat`: coder is handed to chat, drained, recreated and handed back,
no request fails and no stream is cut; with `handoff: false` plan says its downtime as
before.
Then the gateway's clients: three (two on hosts reached over SSH, one manual, its key shown
on a terminal) each open their aliases only through the front; a key rotated under load
(the client re-reading its file) and a client that keeps its key lose no request; a
revoked client is refused at once; a key changed by hand is drift in `fleet check`; no
issued key is in the repository, an output, a log or the inventory.
Real LiteLLM proxies, real nginx, real sshd;
what the fake hosts prove (tests/unit/workflows/test_gateway_switch.py,
tests/unit/cli/test_apply_interrupts.py, tests/unit/cli/test_apply_surge.py,
tests/unit/plan/test_strategy.py) is not
repeated here.
"""

from __future__ import annotations

import json
import os
import pty
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import git
import pytest

from fleet.errors import HostUnreachable
from fleet.gateways.litellm.config import parse_gateway_config
from fleet.yamltext import dump_yaml, make_yaml
from tests.dashboard import load_generator
from tests.gitlog import last_commit
from tests.integration.helpers import (
    FleetRepo,
    _prune_gateway,
    apply,
    chat,
    make_repo,
    request_url,
)
from tests.lab.lab import Lab
from tests.lab.load import ClientLoad, LoadReport, StreamLoad
from tests.waiting import poll, wait_until

pytestmark = pytest.mark.lab
LOADED = ["chat", "coder"]
LOCK = "/srv/fleet/.fleet.lock"


@pytest.fixture(scope="module")
def fleet(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> FleetRepo:
    """coder and reason applied, the front routing to the proxy that serves them."""
    lab.reset()
    repo = make_repo(tmp_path_factory.mktemp("bluegreen"), lab, seats=("coder", "reason"))
    apply(repo)
    return repo


def set_gateway(repo: FleetRepo, key: str, value: Any, message: str) -> None:
    """Set one top-level key of gateway.yaml and commit it."""
    yaml = make_yaml()
    path = repo.desired / "gateway.yaml"
    tree = yaml.load(path.read_text())
    tree[key] = value
    path.write_text(dump_yaml(tree))
    repo.commit(message)


def apply_under_load(repo: FleetRepo, ok: bool = True) -> tuple[str, LoadReport, int | None]:
    """Apply with clients on `chat` and `coder` through the front; the output, what the
    clients saw, and the proxy port the front routed to before."""
    lab = repo.lab
    before = lab.front_port()
    with ClientLoad(lab.gateway_url, lab.master_key, LOADED, max_seconds=600) as load:
        result = repo.fleet("apply", "--auto-approve", "--timeout", "240")
    assert (result.returncode == 0) is ok, result.stdout + result.stderr
    return result.stdout + result.stderr, load.report(), before


def assert_no_request_lost(report: LoadReport) -> None:
    print(report.summary())  # the figures, with -s
    for alias in LOADED:
        line = report.aliases[alias]
        assert line.total >= 8, report.summary()  # the clients ran through the apply
        assert line.failed == 0, report.summary()


def test_a_gateway_only_change_loses_no_request(fleet: FleetRepo) -> None:
    set_gateway(fleet, "alias_params", {"chat": {"temperature": 0.3}}, "chat runs cooler")
    output, report, before = apply_under_load(fleet)
    assert_no_request_lost(report)
    after = fleet.lab.front_port()
    assert {before, after} == {4001, 4002}, "the front moved to the other proxy"
    assert f"point the front at the proxy on :{after} (was :{before})" in output
    chat_entry = parse_gateway_config(fleet.lab.gateway_config()).by_alias()["chat"]
    assert chat_entry.params == {"temperature": 0.3}
    assert fleet.fleet("plan").returncode == 0


def test_a_new_alias_answers_and_loses_no_request(fleet: FleetRepo) -> None:
    fleet.edit(
        "seats/coder.yaml", "aliases: [coder, autocomplete]", "aliases: [coder, autocomplete, tab]"
    )
    output, report, before = apply_under_load(fleet)
    assert_no_request_lost(report)
    assert fleet.lab.front_port() != before
    assert "verify 1 alias(es) on" in output
    status, body = chat(fleet.lab, "tab")
    assert status == 200, body
    assert "coder" in body


def loading(seconds: int) -> tuple[str, str]:
    """coder's edit: the stand-in engine takes `seconds` to load its model."""
    return "port: 8030", f'port: 8030\nenv: {{FLEET_LAB_LOAD_SECONDS: "{seconds}"}}'


def test_a_recreate_loses_nothing_on_untouched_aliases_and_plan_predicted_it(
    fleet: FleetRepo,
) -> None:
    fleet.edit("seats/coder.yaml", *loading(4))
    # the subject is a seat that cannot surge: coder's GPU has room, so desired/ pins it
    fleet.edit("seats/coder.yaml", "port: 8030", "port: 8030\nstrategy: recreate")
    plan = fleet.fleet("plan")
    assert plan.returncode == 2, plan.stdout + plan.stderr
    (line,) = [x for x in plan.stdout.splitlines() if "~ seat coder: " in x]
    assert "~ seat coder: recreate (" in line
    assert "coder, tab unavailable while it loads (last start took " in line, line
    lab = fleet.lab
    with ClientLoad(lab.gateway_url, lab.master_key, ["chat", "coder"], max_seconds=300) as load:
        result = fleet.fleet("apply", "--auto-approve", "--timeout", "240")
    assert result.returncode == 0, result.stdout + result.stderr
    report = load.report()
    print(report.summary())  # the figures, with -s
    assert report.aliases["chat"].total >= 8, report.summary()
    assert report.aliases["chat"].failed == 0, report.summary()
    assert fleet.fleet("plan").returncode == 0


def test_sigterm_mid_apply_rolls_back_releases_the_lock_and_commits(fleet: FleetRepo) -> None:
    fleet.edit("seats/coder.yaml", 'FLEET_LAB_LOAD_SECONDS: "4"', 'FLEET_LAB_LOAD_SECONDS: "40"')
    env = {**os.environ, **fleet.lab.env(), "PYTHONUNBUFFERED": "1"}
    env.pop("FLEET_DESIRED", None)
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "reconciler", "apply", "--auto-approve", "--timeout", "240"],
        cwd=fleet.root,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    seen = []
    for line in process.stdout:  # until the new coder is starting
        seen.append(line)
        if "tower: replace seat coder" in line:
            break
    wait_until(lambda: loading_coder(fleet.lab), 60, "the new coder to be loading", interval=0.5)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=300)
    output = "".join(seen) + out + err
    print(f"SIGTERM apply took {time.monotonic() - started:.1f} s")
    assert process.returncode == 143, output
    assert "error: interrupted by SIGTERM: rolled back what this apply changed" in output
    assert fleet.lab.run("tower", f"test -e {LOCK} || echo none").stdout.strip() == "none"
    message = str(last_commit(fleet.root).message)
    assert message.startswith("fleet apply: interrupted by SIGTERM: rolled back"), message
    assert "- rolled back: seat coder on tower (serving again)" in message
    assert chat(fleet.lab, "coder")[0] == 200
    plan = fleet.fleet("plan")
    assert "~ seat coder on tower" in plan.stdout, "the change is still to do"
    assert "apply in progress" not in plan.stdout and "did not finish" not in plan.stdout
    fleet.edit("seats/coder.yaml", 'FLEET_LAB_LOAD_SECONDS: "40"', 'FLEET_LAB_LOAD_SECONDS: "4"')
    assert fleet.fleet("plan").returncode == 0, "what runs is what desired/ says again"


def loading_coder(lab: Lab) -> bool:
    """A container of tower runs the new coder (the engine that loads for 40 s)."""
    ids = lab.docker("tower", "ps", "-q").stdout.split()
    if not ids:
        return False
    envs = lab.docker("tower", "inspect", "-f", "{{.Config.Env}}", *ids).stdout
    return "FLEET_LAB_LOAD_SECONDS=40" in envs


def containers(lab: Lab) -> list[str]:
    """The names of the tower's running containers."""
    return lab.docker("tower", "ps", "--format", "{{.Names}}").stdout.split()


def test_a_surge_with_a_new_alias_loses_no_request_on_any_alias(fleet: FleetRepo) -> None:
    fleet.edit("seats/coder.yaml", "\nstrategy: recreate", "")  # as the example says: auto
    fleet.edit("seats/coder.yaml", "context: 2048", "context: 1536")
    fleet.edit(
        "seats/coder.yaml",
        "aliases: [coder, autocomplete, tab]",
        "aliases: [coder, autocomplete, tab, fim]",
    )
    plan = fleet.fleet("plan")
    assert "~ seat coder: surge (GPU 0 has " in plan.stdout, plan.stdout
    started = time.monotonic()
    output, report, _ = apply_under_load(fleet)
    print(f"surge apply took {time.monotonic() - started:.1f} s")
    assert_no_request_lost(report)
    assert "tower: surge seat coder: start coder-b on port 9030 beside coder" in output
    running = containers(fleet.lab)
    assert "fleet-tower-coder-b-1" in running and "fleet-tower-coder-1" not in running
    status, body = chat(fleet.lab, "fim")
    assert status == 200, body
    assert fleet.fleet("plan").returncode == 0, "plan is 0 after a surge"


def test_a_surge_whose_new_copy_fails_leaves_the_old_one_serving(fleet: FleetRepo) -> None:
    before_config = fleet.lab.gateway_config()
    load = 'FLEET_LAB_LOAD_SECONDS: "4"'
    failing = f"{load}, FLEET_LAB_FAIL: crash"
    fleet.edit("seats/coder.yaml", load, failing)
    output, report, _ = apply_under_load(fleet, ok=False)
    assert_no_request_lost(report)
    assert "rolled back: seat coder on tower: " in output
    assert "the old copy coder-b kept serving on port 9030" in output
    assert "fleet-tower-coder-b-1" in containers(fleet.lab)
    assert "fleet-tower-coder-1" not in containers(fleet.lab), "the new copy is removed"
    assert fleet.lab.gateway_config() == before_config
    assert chat(fleet.lab, "coder")[0] == 200
    fleet.edit("seats/coder.yaml", failing, load)
    assert fleet.fleet("plan").returncode == 0


def test_a_new_proxy_that_fails_verification_leaves_the_old_one_serving(fleet: FleetRepo) -> None:
    before_config = fleet.lab.gateway_config()
    set_gateway(
        fleet, "alias_params", {"coder": {"model": "hosted_vllm/no-such-model"}}, "a typo'd model"
    )
    output, report, before = apply_under_load(fleet, ok=False)
    assert_no_request_lost(report)
    assert "rolled back: the new proxy on" in output and "the old proxy still serves" in output
    assert "alias coder: a chat completion on" in output
    assert fleet.lab.front_port() == before
    assert fleet.lab.gateway_config() == before_config
    assert chat(fleet.lab, "coder")[0] == 200
    running = fleet.lab.run("gateway", "ss -ltn").stdout
    address = fleet.lab.address_of("gateway")
    assert f"{address}:{before}" in running and f"{address}:{6003 - before}" not in running


def test_plan_says_a_front_loses_no_alias(fleet: FleetRepo) -> None:
    fleet.edit("seats/reason.yaml", "aliases: [reason, chat, assistant]", "aliases: [reason, chat]")
    plan = fleet.fleet("plan")
    assert plan.returncode == 2, plan.stdout + plan.stderr
    assert "gateway: blue/green behind the front" in plan.stdout
    assert "no alias unavailable" in plan.stdout


def test_an_apply_killed_at_its_worst_boundaries_is_finished_by_the_next_plain_one(
    fleet: FleetRepo,
) -> None:
    """A real `fleet apply` killed (SIGKILL, by its failpoint) while a surge's new copy
    waits for its health gate, then the next one killed after writing the gateway config
    but before the front switched: the next plain apply takes the locks over and
    converges, the new alias answers through the front, and `chat` (untouched) loses no
    request. tests/unit/cli/test_apply_crash.py kills at every boundary on fake hosts."""
    reason = (fleet.desired / "seats" / "reason.yaml").read_text()
    if "aliases: [reason, chat]\n" in reason:  # the plan-only edit above, not applied
        fleet.edit(
            "seats/reason.yaml", "aliases: [reason, chat]", "aliases: [reason, chat, assistant]"
        )
    coder = (fleet.desired / "seats" / "coder.yaml").read_text()
    aliases = next(line for line in coder.splitlines() if line.startswith("aliases: ["))
    fleet.edit("seats/coder.yaml", aliases, aliases.replace("]", ", late]"))
    context = next(line for line in coder.splitlines() if line.startswith("context: "))
    fleet.edit("seats/coder.yaml", context, "context: 1024")
    lab = fleet.lab
    started = time.monotonic()
    with ClientLoad(lab.gateway_url, lab.master_key, ["chat"], max_seconds=300) as load:
        for point in ("surge.started", "gateway.config_written"):
            killed = fleet.fleet(
                "apply", "--auto-approve", env={"FLEET_FAILPOINT": f"after:{point}"}
            )
            assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
            assert f"failpoint {point}: killing this process" in killed.stderr
        left = fleet.fleet("plan")
        assert left.returncode != 0, left.stdout
        assert "stale lock" in left.stdout and "two-copies" in left.stdout, left.stdout
        result = fleet.fleet("apply", "--auto-approve", "--timeout", "240")
    print(f"two kills and the recovering apply took {time.monotonic() - started:.1f} s")
    report = load.report()
    print(report.summary())
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "took over the lock of an apply that is gone" in output
    assert "fleet unlock" not in output
    assert report.aliases["chat"].total >= 8 and report.aliases["chat"].failed == 0, (
        report.summary()
    )
    status, body = chat(lab, "late")
    assert status == 200, body
    assert [c for c in containers(lab) if "coder" in c] != [], containers(lab)
    assert len([c for c in containers(lab) if "-coder" in c]) == 1, containers(lab)
    assert lab.run("tower", f"test -e {LOCK} || echo none").stdout.strip() == "none"
    assert fleet.fleet("plan").returncode == 0
    assert fleet.fleet("check").returncode == 0


def recreated_coder(repo: FleetRepo, seconds: int, *extra: str) -> None:
    """coder pinned to `strategy: recreate`, loading for `seconds` (plus `extra` lines)."""
    path = repo.desired / "seats" / "coder.yaml"
    dropped = ("env:", "strategy:", "handoff:")
    kept = [line for line in path.read_text().splitlines() if not line.startswith(dropped)]
    added = [f'env: {{FLEET_LAB_LOAD_SECONDS: "{seconds}"}}', "strategy: recreate", *extra]
    path.write_text("\n".join(kept + added) + "\n")
    repo.commit(f"coder recreates, loading for {seconds} s")


def test_a_recreate_hands_coder_to_chat_and_fails_no_request_and_cuts_no_stream(
    fleet: FleetRepo,
) -> None:
    """`fallbacks: {coder: [chat]}` declared and coder recreated, with clients and long
    streams (one always in flight) on `coder` and on `chat` from before apply begins:
    plan says `coder` is served by `chat` meanwhile, apply hands it off, drains, recreates
    and hands it back; not one request fails and not one stream is cut on either."""
    path = fleet.desired / "gateway.yaml"
    yaml = make_yaml()
    tree = yaml.load(path.read_text())
    tree["fallbacks"] = {"coder": ["chat"]}
    (tree.get("alias_params") or {}).pop("coder", None)  # the typo'd model a test above left
    path.write_text(dump_yaml(tree))
    fleet.commit("coder falls back to chat")
    apply(fleet)  # the fallback live, and coder's entry as desired/ says, before the load
    recreated_coder(fleet, 3)
    plan = fleet.fleet("plan")
    assert plan.returncode == 2, plan.stdout + plan.stderr
    (line,) = [x for x in plan.stdout.splitlines() if "~ seat coder: " in x]
    assert "; coder served by chat while it loads (last start took " in line, line
    lab = fleet.lab
    started = time.monotonic()
    with (
        ClientLoad(lab.gateway_url, lab.master_key, LOADED, max_seconds=600) as load,
        StreamLoad(lab.gateway_url, lab.master_key, LOADED, max_seconds=600) as streams,
    ):
        wait_until(lambda: all(streams.in_flight.values()), 60, "a stream in flight on each")
        result = fleet.fleet("apply", "--auto-approve", "--timeout", "240")
    print(f"handoff apply under load took {time.monotonic() - started:.1f} s")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    steps = ["hand off seat coder's aliases", "drain seat coder", "healthy", "hand coder back"]
    at = [output.find(step) for step in steps]
    assert -1 not in at and at == sorted(at), output
    assert_no_request_lost(load.report())
    report = streams.report()
    print(report.summary(), {a: sorted(m) for a, m in streams.models.items()})
    for alias in LOADED:
        assert report.aliases[alias].total >= 2, report.summary()
        assert report.aliases[alias].failed == 0, report.summary()
    entry = parse_gateway_config(lab.gateway_config()).by_alias()["coder"]
    assert entry.seat == "coder", "the alias is back on its own seat"
    assert fleet.fleet("plan").returncode == 0


def test_a_seat_that_refuses_handoff_shows_its_downtime_as_before(fleet: FleetRepo) -> None:
    """`handoff: false` on coder, its fallback still declared and healthy: plan says its
    aliases are down while it loads, as without a fallback (apply's steps without a
    handoff: tests/unit/cli/test_apply_handoff.py)."""
    recreated_coder(fleet, 5, "handoff: false")
    plan = fleet.fleet("plan")
    assert plan.returncode == 2, plan.stdout + plan.stderr
    (line,) = [x for x in plan.stdout.splitlines() if "~ seat coder: " in x]
    down = line.split("; ", 1)[1]
    assert "served by" not in line and "unavailable while it loads" in down, line
    assert "coder" in down.split(" unavailable")[0].split(", "), line


# -- Clients and their keys: real sshd on the client hosts, real nginx, real LiteLLM ------
# tower (a host of desired/) and cpubox (only an ssh_config Host here) receive keys in
# files under /srv/fleet, which each lab host has of its own (its /etc is this machine's).
# One apply puts the key check live (the config names it: one blue/green switch); every
# key change after it is a rename of the key file, no proxy restarts.

CLIENTS = """
clients:
  tanko:
    aliases: [coder]
    rpm: 6000
    delivery: {host: tower, file: /srv/fleet/tanko.env}
  bot:
    aliases: [chat]
    delivery: {host: cpubox, file: /srv/fleet/bot.env, variable: BOT_KEY}
  phone:
    aliases: [chat]
    delivery: manual
"""
ISSUED_KEY = re.compile(r"sk-fleet-[A-Za-z0-9_-]{43}")
SEEN: list[str] = []  # every output of fleet these tests ran
ISSUED: set[str] = set()  # every key they saw issued


def run_fleet(repo: FleetRepo, *args: str, code: int = 0) -> str:
    result = repo.fleet(*args)
    SEEN.append(result.stdout + result.stderr)
    assert result.returncode == code, result.stdout + result.stderr
    return result.stdout + result.stderr


def client_key(lab: Lab, host: str, name: str, variable: str = "LITELLM_API_KEY") -> str:
    text = (lab.hosts[host].compose_dir / name).read_text()
    match = re.search(rf"^{variable}=(\S+)$", text, re.M)
    assert match is not None and ISSUED_KEY.fullmatch(match.group(1)), text
    ISSUED.add(match.group(1))
    return match.group(1)


def status(lab: Lab, key: str, alias: str) -> int:
    return request_url(
        f"{lab.gateway_url}/v1/chat/completions",
        method="POST",
        headers={"Authorization": f"Bearer {key}"},
        body={"model": alias, "max_tokens": 2, "messages": [{"role": "user", "content": "hi"}]},
    ).status


def on_terminal(repo: FleetRepo, *args: str) -> str:
    """`fleet ARGS` with its stdout on a pseudo-terminal, as an operator runs it."""
    main, side = pty.openpty()
    environment = {**os.environ, **repo.lab.env()}
    environment.pop("FLEET_DESIRED", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "reconciler", *args],
        cwd=repo.root,
        stdout=side,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=environment,
    )
    os.close(side)
    chunks = []
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main)
    _, errors = proc.communicate(timeout=300)
    assert proc.returncode == 0, errors.decode(errors="replace")
    return b"".join(chunks).decode(errors="replace")


class RereadingLoad(ClientLoad):
    """A client that reads its key from its delivered file before every request, as an
    agent that sources its environment file for each job does."""

    def __init__(self, path: Path, variable: str, *args: Any, **kwargs: Any) -> None:
        self.source = (path, variable)
        super().__init__(*args, **kwargs)

    @property  # type: ignore[override]
    def key(self) -> str | None:
        path, variable = self.source
        match = re.search(rf"^{variable}=(\S+)$", path.read_text(), re.M)
        return match.group(1) if match else None

    @key.setter
    def key(self, value: str | None) -> None:
        pass


def test_each_client_key_opens_its_aliases_only(fleet: FleetRepo) -> None:
    lab = fleet.lab
    path = fleet.desired / "gateway.yaml"
    tree = make_yaml().load(path.read_text())
    (tree.get("alias_params") or {}).pop("coder", None)  # the typo an earlier test left
    path.write_text(dump_yaml(tree) + CLIENTS)
    fleet.commit("three clients of the gateway")
    SEEN.append(run_fleet(fleet, "plan", code=2))
    assert "+ client tanko: key for coder -> tower:/srv/fleet/tanko.env LITELLM_API_KEY" in SEEN[-1]
    run_fleet(fleet, "apply", "--auto-approve", "--timeout", "240")
    shown = on_terminal(fleet, "keys", "rotate", "phone")
    phone = ISSUED_KEY.findall(shown)
    assert len(phone) == 1 and "fleet keys confirm phone" in shown
    ISSUED.add(phone[0])
    tanko, bot = (
        client_key(lab, "tower", "tanko.env"),
        client_key(lab, "cpubox", "bot.env", "BOT_KEY"),
    )
    assert (lab.hosts["tower"].compose_dir / "tanko.env").stat().st_mode & 0o777 == 0o600
    seen = {
        (who, alias): status(lab, key, alias)
        for who, key in (("tanko", tanko), ("bot", bot), ("phone", phone[0]))
        for alias in ("coder", "chat")
    }
    assert seen == {
        ("tanko", "coder"): 200,
        ("tanko", "chat"): 403,
        ("bot", "coder"): 403,
        ("bot", "chat"): 200,
        ("phone", "coder"): 403,
        ("phone", "chat"): 200,
    }
    assert status(lab, "sk-fleet-" + "x" * 43, "chat") == 401
    assert status(lab, lab.master_key, "chat") == 200, "the master key still works"
    run_fleet(fleet, "plan")  # 0: every client holds a key the gateway holds


def test_a_rotation_under_load_drops_no_request(fleet: FleetRepo) -> None:
    lab = fleet.lab
    old = client_key(lab, "tower", "tanko.env")
    bot = client_key(lab, "cpubox", "bot.env", "BOT_KEY")
    path = lab.hosts["tower"].compose_dir / "tanko.env"
    with (
        RereadingLoad(path, "LITELLM_API_KEY", lab.gateway_url, None, ["coder"]) as rotating,
        ClientLoad(lab.gateway_url, bot, ["chat"]) as other,
    ):
        run_fleet(fleet, "keys", "rotate", "tanko")
        wait_until(lambda: rotating.report().total >= 8, 60, "requests after the rotation")
    new = client_key(lab, "tower", "tanko.env")
    print(rotating.report().summary(), other.report().summary())
    assert rotating.report().failed == 0 and other.report().failed == 0
    assert new != old and status(lab, old, "coder") == 401 and status(lab, new, "coder") == 200


def test_a_revoked_client_is_refused_at_once(fleet: FleetRepo) -> None:
    lab = fleet.lab
    bot = client_key(lab, "cpubox", "bot.env", "BOT_KEY")
    text = (fleet.desired / "gateway.yaml").read_text()
    start = text.index("  bot:")
    fleet.edit("gateway.yaml", text[start : text.index("  phone:")], "")
    applied = run_fleet(fleet, "apply", "--auto-approve", "--timeout", "240")
    assert "- client bot: not in desired/" in applied  # the plan apply showed first
    assert status(lab, bot, "chat") == 401


def test_a_key_changed_by_hand_is_drift(fleet: FleetRepo) -> None:
    lab = fleet.lab
    path = lab.hosts["tower"].compose_dir / "tanko.env"
    path.write_text("LITELLM_API_KEY=sk-typed-by-hand-0123456789\n")
    drift = run_fleet(fleet, "check", code=2)
    assert "client tanko: the key at tower:/srv/fleet/tanko.env LITELLM_API_KEY is not one" in drift
    run_fleet(fleet, "apply", "--auto-approve", "--timeout", "240")  # a new key, verified
    assert status(lab, client_key(lab, "tower", "tanko.env"), "coder") == 200


def test_no_issued_key_is_anywhere_but_its_own_file(fleet: FleetRepo) -> None:
    lab = fleet.lab
    SEEN.append(run_fleet(fleet, "plan", "--json"))  # the inventory apply wrote is a repo file
    texts = list(SEEN)
    texts.append(git.Repo(fleet.root).git.log("-p", "--all"))
    files = [p for p in fleet.root.rglob("*") if p.is_file() and ".git" not in p.parts]
    for host in lab.hosts.values():
        files += [p for p in (host.root / "logs").rglob("*") if p.is_file()]
        files += [p for p in (host.root / "etc-litellm").glob("*") if p.is_file()]
        files += [p for p in host.compose_dir.rglob("*") if p.is_file() and p.suffix != ".env"]
    texts += [p.read_text(errors="replace") for p in files]
    assert len(ISSUED) >= 5
    leaks = [k[:12] for k in sorted(ISSUED) if any(k in text for text in texts)]
    assert leaks == [], f"issued keys found outside their files: {leaks}"


PROMETHEUS_DIR = "/srv/fleet/prometheus-lab"  # on the gateway host: its config, data, log
EXPORTER = Path(__file__).resolve().parents[1] / "lab" / "runtime" / "exporter.py"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def prometheus_query(url: str, path: str) -> Any:
    reply = request_url(f"{url}{path}", timeout=10)
    assert reply.status == 200, reply.body
    return json.loads(reply.body)["data"]


def monitor(fleet: FleetRepo, listen: str) -> None:
    """Declare the monitoring (Prometheus on the gateway host, fleet's --listen) and the
    tower's exporters. Committed."""
    fleet_yaml, tower = fleet.desired / "fleet.yaml", fleet.desired / "hosts" / "tower.yaml"
    fleet_yaml.write_text(
        fleet_yaml.read_text() + "monitoring:\n  host: gateway\n"
        f"  targets_dir: /srv/fleet/prometheus\n  fleet_target: {listen}\n"
    )
    tower.write_text(tower.read_text() + "exporters:\n  node: {port: 9100}\n  dcgm: {port: 9400}\n")
    fleet.commit("monitoring")


def surge_coder_and_drop_reason(fleet: FleetRepo) -> None:
    """coder gains ngram drafting (a surge to its other port, with the spec-decode
    counters), reason goes. Committed."""
    coder = fleet.desired / "seats" / "coder.yaml"
    text = coder.read_text().replace("\nstrategy: recreate", "")
    coder.write_text(text + "speculative: {method: ngram, num_tokens: 3}\n")
    (fleet.desired / "seats" / "reason.yaml").unlink()
    _prune_gateway(fleet.desired)
    yaml, path = make_yaml(), fleet.desired / "gateway.yaml"
    gateway = yaml.load(path.read_text())
    gateway.get("alias_params", {}).pop("coder", None)  # the typo'd model a test above left
    path.write_text(dump_yaml(gateway))
    fleet.commit("coder drafts with ngram; reason goes")


def start_prometheus(lab: Lab, address: str) -> int:
    """Debian's Prometheus on the gateway host, reading the scrape configs apply wrote
    (2.42 has no scrape_config_files: they are its prometheus.yml, after a global block)."""
    host = lab.gateway_host
    assert host is not None
    folder = host.compose_dir / "prometheus-lab"
    folder.mkdir(exist_ok=True)
    scrape = (host.compose_dir / "prometheus" / "fleet-scrape-configs.yml").read_text()
    (folder / "prometheus.yml").write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n" + scrape
    )
    started = lab.run(
        host.name,
        f"setsid prometheus --config.file={PROMETHEUS_DIR}/prometheus.yml "
        f"--storage.tsdb.path={PROMETHEUS_DIR}/data --web.listen-address={address} "
        f"> {PROMETHEUS_DIR}/log 2>&1 < /dev/null & echo $!",
        check=True,
    )
    return int(started.stdout.split()[-1])


def scraped(url: str) -> dict[tuple[str, str], dict[str, Any]]:
    """The lab Prometheus's active targets by (job, seat or exporter); {} if it is not up."""
    try:
        active = prometheus_query(url, "/api/v1/targets")["activeTargets"]
    except (HostUnreachable, AssertionError):
        return {}
    labels = [t["labels"] for t in active]
    keys = [(x["job"], x.get("seat") or x.get("exporter") or "") for x in labels]
    return dict(zip(keys, active, strict=True))


def all_up(url: str, wanted: set[tuple[str, str]]) -> dict[tuple[str, str], dict[str, Any]] | None:
    found = scraped(url)
    healthy = set(found) == wanted and all(t["health"] == "up" for t in found.values())
    return found if healthy else None


def test_prometheus_scrapes_the_targets_apply_writes_and_answers_every_panel(
    fleet: FleetRepo,
) -> None:
    """After apply, the lab's Prometheus (on the gateway host, reading fleet's scrape
    configs and target files) has every seat up; after a surge and a removal, the surged
    seat is scraped on its new port, the removed one not at all, and the gateway (with
    its bearer token), the tower's exporters and fleet's own --listen are up; every
    dashboard panel's query returns data."""
    lab, started = fleet.lab, time.monotonic()
    host, tower = lab.gateway_host, lab.hosts["tower"]
    assert host is not None
    config = lab.gateway_config()
    assert "litellm_settings:\n" in config
    # the next proxy exports its metrics (behind its master key): LiteLLM's own callback
    callbacks = "litellm_settings:\n  callbacks: [prometheus]\n"
    lab.set_gateway_config(config.replace("litellm_settings:\n", callbacks, 1))
    listen = f"127.0.0.1:{free_port()}"
    monitor(fleet, listen)
    plan = fleet.fleet("plan")
    assert "Wave 5: monitoring" in plan.stdout, plan.stdout
    assert re.search(rf"~ seat reason: none -> {tower.address}:\d+", plan.stdout), plan.stdout
    apply(fleet)
    address = f"{host.address}:9090"
    url, pid = f"http://{address}", start_prometheus(lab, address)
    exporters: list[subprocess.Popen[bytes]] = []
    loop: subprocess.Popen[bytes] | None = None
    try:
        seats = {("fleet-seats", "coder"), ("fleet-seats", "reason")}
        wait_until(
            lambda: (
                seats <= set(scraped(url)) and all(scraped(url)[s]["health"] == "up" for s in seats)
            ),
            60,
            "coder and reason up in the lab's Prometheus",
            interval=0.5,
        )
        print(f"seats up {time.monotonic() - started:.1f} s into the test")
        surge_coder_and_drop_reason(fleet)
        plan = fleet.fleet("plan", "--prune")
        address_re = re.escape(tower.address)
        assert re.search(rf"~ seat reason: {address_re}:\d+ -> none", plan.stdout), plan.stdout
        moved = re.search(rf"~ seat coder: {address_re}:(\d+) -> {address_re}:(\d+)", plan.stdout)
        assert moved is not None, plan.stdout
        apply(fleet, "--prune")
        # a committed measurement of coder: the loop exports it and its baseline
        bench = fleet.fleet(
            "bench",
            "--write",
            "--seat",
            "coder",
            "--via",
            "gateway",
            "--runs",
            "1",
            "--max-tokens",
            "16",
        )
        assert bench.returncode == 0, bench.stdout + bench.stderr
        exporters = [
            subprocess.Popen(
                [
                    sys.executable,
                    str(EXPORTER),
                    kind,
                    tower.address,
                    port,
                    "tower",
                    str(tower.gpu_dir),
                ]
            )
            for kind, port in (("node", "9100"), ("dcgm", "9400"))
        ]
        loop = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "reconciler",
                "reconcile",
                "--interval",
                "600",
                "--listen",
                listen,
            ],
            cwd=fleet.root,
            env={**os.environ, **lab.env()},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wanted = {
            ("fleet-seats", "coder"),  # reason's target went with it
            ("fleet-gateway", ""),
            ("fleet-exporters", "node"),
            ("fleet-exporters", "dcgm"),
            ("fleet", ""),
        }
        up = wait_until(
            lambda: all_up(url, wanted),
            60,
            "every target up",
            interval=0.5,
            detail=lambda: "\n".join(
                f"{key}: {t['health']} {t['scrapeUrl']} {t['lastError']}"
                for key, t in sorted(scraped(url).items())
            ),
        )
        assert up[("fleet-seats", "coder")]["labels"]["instance"] == f"{tower.address}:{moved[2]}"
        assert request_url(f"{lab.gateway_url}/metrics").status == 401  # the token is needed
        print(f"every target up {time.monotonic() - started:.1f} s into the test")
        status, body = chat(lab, "coder")  # through the gateway: its counters and coder's
        assert status == 200, body
        generator = load_generator()
        missing: list[str] = []

        def answered() -> bool:
            missing[:] = [
                f"{title}: {query}"
                for title, query in generator.queries()
                if not prometheus_query(url, f"/api/v1/query?query={quote(query)}")["result"]
            ]
            return not missing

        assert poll(answered, 60, interval=1.0), "no data for:\n" + "\n".join(missing)
    finally:
        lab.run(host.name, f"kill {pid}")
        for process in (*exporters, *([loop] if loop else [])):
            process.terminate()
            process.wait(timeout=60)
    print(f"monitoring test took {time.monotonic() - started:.1f} s")
