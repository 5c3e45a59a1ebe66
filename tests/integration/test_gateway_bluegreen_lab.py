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
Real LiteLLM proxies, real nginx, real sshd;
what the fake hosts prove (tests/unit/workflows/test_gateway_switch.py,
tests/unit/cli/test_apply_interrupts.py, tests/unit/cli/test_apply_surge.py,
tests/unit/plan/test_strategy.py) is not
repeated here.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

import git
import pytest

from fleet.gateways.litellm.config import parse_gateway_config
from fleet.yamltext import dump_yaml, make_yaml
from tests.integration.helpers import FleetRepo, apply, chat, make_repo
from tests.lab.lab import Lab
from tests.lab.load import ClientLoad, LoadReport, StreamLoad
from tests.waiting import wait_until

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
    message = str(git.Repo(fleet.root).head.commit.message)
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
