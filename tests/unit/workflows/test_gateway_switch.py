"""switch_config on a fake gateway host: blue/green behind the front, its rollbacks, and
the in-place restart of a gateway without a front.

The change adds the alias `summarizer` (flash's second alias) to a config that lacks it.
What a user checks: which proxy the front routes to, that it never routed to nothing
(`unserved`), the config file, what the journal recorded, what apply said.
"""

from __future__ import annotations

import json
import re

import pytest

from fleet.errors import GatewayError
from fleet.gateways.litellm.render import render_gateway_config
from fleet.spec.models import DesiredFleet
from reconciler.workflows.gateway import switch_config
from tests.fakes.clock import FakeClock
from tests.fakes.gateway import FakeGateway
from tests.fakes.host import FakeHost, FakeSessions
from tests.unit.render.test_compose import DESIRED, example
from tests.unit.workflows.test_apply import Steps

UPSTREAM = "/etc/nginx/fleet/litellm-upstream.conf"
CONFIG = "/etc/litellm/config.yaml"
JOURNAL = "/srv/fleet/.fleet-journal.jsonl"
SEED = "model_list:\n  - model_name: x\n    litellm_params: {model: openai/x}\n"


def fleets(edits: dict[str, tuple[str, str]] | None = None) -> tuple[DesiredFleet, str, str]:
    """The desired fleet, the live config (no summarizer) and the new one (with it)."""
    after = example(edits)
    before = example({**(edits or {}), "seats/flash.yaml": ("[flash, summarizer]", "[flash]")})
    old = render_gateway_config(SEED, before)
    return after, old, render_gateway_config(old, after)


def without_front() -> dict[str, tuple[str, str]]:
    """desired/gateway.yaml with its front block dropped (the restart stays)."""
    text = (DESIRED / "gateway.yaml").read_text()
    block = re.search(r"^front:.*\n(?:[ #].*\n)*", text, re.MULTILINE)
    assert block is not None
    return {"gateway.yaml": (block.group(0), "")}


def gateway_host(
    edits: dict[str, tuple[str, str]] | None = None,
) -> tuple[DesiredFleet, FakeGateway, FakeSessions, FakeClock, str, str]:
    fleet, old, new = fleets(edits)
    assert fleet.gateway is not None
    clock = FakeClock()
    fake = FakeGateway(fleet.gateway, old, clock)
    return fleet, fake, FakeSessions({"gateway": fake.host}), clock, old, new


SAID = Steps()


def switch(
    fleet: DesiredFleet,
    sessions: FakeSessions,
    new: str,
    clock: FakeClock,
    aliases: tuple[str, ...] = ("summarizer",),
) -> str:
    """switch_config verifying `aliases`, with a 60 s bound; SAID keeps what it said."""
    SAID.said.clear()
    return switch_config(sessions, fleet, new, aliases, 60.0, SAID, clock)


def journal(host: FakeHost) -> list[dict[str, str]]:
    return [json.loads(line) for line in host.files.get(JOURNAL, "").splitlines()]


def test_blue_green_starts_verifies_switches_then_stops_the_old_proxy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LITELLM_MASTER_KEY", "sk-lab")
    fleet, fake, sessions, clock, old, new = gateway_host()
    assert "summarizer" not in fake.serving()
    previous = switch(fleet, sessions, new, clock)
    assert previous == old
    assert fake.events == ["stop 4002", "start 4002", "reload 4002", "stop 4001"]
    assert fake.unserved == []  # the front always had a proxy behind it
    assert "summarizer" in fake.serving() and list(fake.proxies) == [4002]
    assert fake.host.files[UPSTREAM].endswith("server 127.0.0.13:4002;\n")
    assert fake.host.files[CONFIG] == new and fake.host.files[CONFIG + ".fleet-prev"] == old
    calls = [d for k, d in fake.host.journal if k in ("http", "exec")]
    reload = calls.index("nginx -s reload")
    assert "POST 127.0.0.13:4002/v1/chat/completions" in calls[:reload]  # verified directly
    assert "POST 127.0.0.13:4000/v1/chat/completions" in calls[reload:]  # then via the front
    assert calls.index("fleet-gateway-proxy stop 4001") > calls.index(
        "GET 127.0.0.13:4000/v1/models"
    )
    (entry,) = journal(fake.host)
    assert (entry["step"], entry["how"], entry["aliases"]) == (
        "gateway",
        "blue-green",
        "summarizer",
    )
    assert "gateway: point the front at the proxy on :4002 (was :4001)" in SAID.said


def test_the_next_switch_goes_back_to_the_first_port(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LITELLM_MASTER_KEY", "sk-lab")
    fleet, fake, sessions, clock, old, new = gateway_host()
    switch(fleet, sessions, new, clock)
    assert switch(fleet, sessions, old, clock, ()) == new  # the rollback of the first switch
    assert fake.events[-3:] == ["start 4001", "reload 4001", "stop 4002"]
    assert "summarizer" not in fake.serving() and fake.unserved == []


FAILURES = [
    (
        "new-proxy-does-not-start",
        {"fail_start": "fleet-gateway-start: litellm exited with code 1: ScannerError"},
        "the new proxy on :4002: proxy start (`fleet-gateway-proxy start 4002`) failed: "
        "fleet-gateway-start: litellm exited with code 1: ScannerError; "
        "the old proxy still serves",
        ["stop 4002", "start 4002", "stop 4002"],
    ),
    (
        "new-proxy-fails-its-chat",
        {"chat_status": 500},
        "the new proxy on :4002: alias summarizer: a chat completion on 127.0.0.13:4002 "
        "answered HTTP 500",
        ["stop 4002", "start 4002", "stop 4002"],
    ),
    (
        "front-reload-fails",
        {"fail_reloads": 1},
        "through the front after the switch to :4002: front reload (`nginx -s reload`) "
        'failed: nginx: [emerg] unexpected "}" in upstream file; '
        "the front points back at the proxy on :4001",
        ["stop 4002", "start 4002", "reload failed", "reload 4001", "stop 4002"],
    ),
]


@pytest.mark.parametrize(
    ("switches", "message", "events"),
    [f[1:] for f in FAILURES],
    ids=[f[0] for f in FAILURES],
)
def test_a_failed_switch_leaves_the_old_proxy_serving(
    monkeypatch: pytest.MonkeyPatch, switches: dict[str, object], message: str, events: list[str]
) -> None:
    monkeypatch.setenv("LITELLM_MASTER_KEY", "sk-lab")
    fleet, fake, sessions, clock, old, new = gateway_host()
    for name, value in switches.items():
        setattr(fake, name, value)
    with pytest.raises(GatewayError) as caught:
        switch(fleet, sessions, new, clock)
    assert str(caught.value).startswith(message)
    assert fake.events == events
    assert fake.unserved == [] and list(fake.proxies) == [4001] and fake.routed == 4001
    assert "summarizer" not in fake.serving()
    assert fake.host.files[CONFIG] == old
    assert fake.host.files[UPSTREAM].endswith("server 127.0.0.13:4001;\n")
    assert journal(fake.host) == []  # nothing went live


def test_a_new_proxy_that_never_lists_the_alias_times_out_on_the_clock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LITELLM_MASTER_KEY", "sk-lab")
    fleet, fake, sessions, clock, old, _ = gateway_host()
    with pytest.raises(GatewayError, match="does not list summarizer"):
        switch(fleet, sessions, old, clock)  # the "new" text lacks the alias
    assert 60.0 <= clock.waited <= 62.0  # the whole bound, on the fake clock
    assert fake.routed == 4001 and list(fake.proxies) == [4001]


def test_without_a_front_the_proxy_restarts_in_place_and_the_time_is_journaled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LITELLM_MASTER_KEY", "sk-lab")
    fleet, fake, sessions, clock, old, new = gateway_host(without_front())
    assert fleet.gateway is not None and fleet.gateway.front is None
    assert switch(fleet, sessions, new, clock) == old
    assert fake.events == ["restart 4001"]
    assert fake.unserved == ["in-place restart of :4001 (11.8 s)"]  # every alias was down
    assert "summarizer" in fake.serving()
    (entry,) = journal(fake.host)
    assert (entry["how"], entry["seconds"]) == ("in-place", "11.8")


def test_a_failed_in_place_restart_puts_the_previous_config_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LITELLM_MASTER_KEY", "sk-lab")
    fleet, fake, sessions, clock, old, new = gateway_host(without_front())
    fake.fail_start = "fleet-gateway-restart: litellm exited with code 1: config rejected"
    with pytest.raises(GatewayError, match="config rejected"):
        switch(fleet, sessions, new, clock)
    assert fake.events == ["restart 4001", "restart 4001"]
    assert fake.host.files[CONFIG] == old and "summarizer" not in fake.serving()
    assert fake.proxies  # serving the previous config again


@pytest.mark.parametrize("front", [True, False], ids=["blue-green", "in-place"])
def test_the_configs_mode_is_kept_and_its_previous_copy_takes_it(
    monkeypatch: pytest.MonkeyPatch, front: bool
) -> None:
    """A LiteLLM config often holds provider keys, so its owner makes it 0600."""
    monkeypatch.setenv("LITELLM_MASTER_KEY", "sk-lab")
    fleet, fake, sessions, clock, _, new = gateway_host(None if front else without_front())
    fake.host.modes[CONFIG] = 0o600
    switch(fleet, sessions, new, clock)
    assert fake.host.files[CONFIG] == new
    assert fake.host.modes[CONFIG] == 0o600
    assert fake.host.modes[CONFIG + ".fleet-prev"] == 0o600


def test_a_dead_front_stops_the_switch_before_anything_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LITELLM_MASTER_KEY", "sk-lab")
    fleet, fake, sessions, clock, old, new = gateway_host()
    fake.front_dead = True
    fake.refresh()
    with pytest.raises(GatewayError) as caught:
        switch(fleet, sessions, new, clock)
    assert "does not answer" in str(caught.value)
    assert str(caught.value).endswith("nothing was changed")
    assert fake.events == [] and list(fake.proxies) == [4001]
    assert fake.host.files[CONFIG] == old


def test_when_the_front_cannot_be_pointed_back_both_proxies_keep_running(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every undo step that can run does; none that would leave the front with no proxy."""
    monkeypatch.setenv("LITELLM_MASTER_KEY", "sk-lab")
    fleet, fake, sessions, clock, _old, new = gateway_host()
    fake.fail_reloads = 2
    with pytest.raises(GatewayError) as caught:
        switch(fleet, sessions, new, clock)
    assert "pointing the front back at :4001 failed too: both proxies keep running" in str(
        caught.value
    )
    assert fake.events == ["stop 4002", "start 4002", "reload failed", "reload failed"]
    assert sorted(fake.proxies) == [4001, 4002] and fake.unserved == []
