"""Gateway changes under client load through the lab's nginx front: no request lost.

One fleet (coder and reason on tower) applied once for the whole module; then, each with
2 clients x 4 requests/s on `chat` and on `coder` through the front (tests/lab/load.py):
a gateway-only change (alias params), a change that adds an alias, and a new proxy that
fails its verification (rolled back, the old proxy serving throughout). Real LiteLLM
proxies, real nginx, real sshd; what the unit tests prove on the fake gateway host
(tests/unit/workflows/test_gateway_switch.py) is not repeated here.
"""

from __future__ import annotations

from typing import Any

import pytest

from fleet.gateways.litellm.config import parse_gateway_config
from fleet.yamltext import dump_yaml, make_yaml
from tests.integration.helpers import FleetRepo, apply, chat, make_repo
from tests.lab.lab import Lab
from tests.lab.load import ClientLoad, LoadReport

pytestmark = pytest.mark.lab
LOADED = ["chat", "coder"]


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
