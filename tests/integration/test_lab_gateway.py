"""The lab's gateway: a real LiteLLM proxy whose aliases route to the stand-in seats,
restarted over SSH with `fleet-gateway-restart` as desired/gateway.yaml declares."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.lab import Lab
from tests.lab.compose import compose_text, seat

pytestmark = pytest.mark.lab


def aliases(tower: str, rig: str) -> str:
    """Two gateway aliases, one per seat, for the lab's tower and rig addresses."""
    return f"""\
  - model_name: lab-alpha
    litellm_params:
      model: hosted_vllm/ga
      api_base: http://{tower}:8091/v1
  - model_name: lab-beta
    litellm_params:
      model: hosted_vllm/gb
      api_base: http://{rig}:8092/v1

router_settings:"""


@pytest.fixture(scope="module")
def routed(lab: Lab) -> Iterator[None]:
    """Two seats on two hosts and a gateway config with an alias for each."""
    lab.reset()  # no seat an earlier module on this worker left on the GPUs
    tower, rig = lab.address_of("tower"), lab.address_of("rig")
    ga = seat(
        address=tower,
        model="stories42M-embed",
        served="ga",
        port=8091,
        gpus=[1],
        args=["--kv-cache-memory-bytes", "64MiB"],
    )
    gb = seat(
        address=rig,
        model="Llama-3.1-8B-Instruct",
        served="gb",
        port=8092,
        gpus=[1],
        handover="runtime",
        args=["--max-model-len", "4096", "--kv-cache-memory-bytes", "1GiB"],
    )
    assert lab.compose_up("tower", "labgw", compose_text({"ga": ga})).returncode == 0
    assert lab.compose_up("rig", "labgw", compose_text({"gb": gb})).returncode == 0
    initial = lab.initial_gateway_config
    lab.set_gateway_config(initial.replace("\nrouter_settings:", "\n" + aliases(tower, rig), 1))
    restart = lab.restart_gateway()
    assert restart.returncode == 0, restart.stderr
    yield
    lab.set_gateway_config(initial)
    lab.restart_gateway()
    for host in ("tower", "rig"):
        lab.compose_down(host, "labgw")


def chat(lab: Lab, alias: str) -> tuple[int, Any]:
    """A chat completion through the proxy with the master key."""
    body = {"model": alias, "messages": [{"role": "user", "content": "who are you?"}]}
    request = urllib.request.Request(
        f"{lab.gateway_url}/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {lab.master_key}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        with err:
            return err.code, json.loads(err.read())


@pytest.mark.parametrize(("alias", "seat_name"), [("lab-alpha", "ga"), ("lab-beta", "gb")])
def test_alias_routes_a_chat_to_its_seat(
    lab: Lab, routed: None, alias: str, seat_name: str
) -> None:
    status, body = chat(lab, alias)
    assert status == 200, body
    assert f"This is {seat_name} answering." in body["choices"][0]["message"]["content"]


def test_dead_alias_from_the_drifted_config_fails(lab: Lab, routed: None) -> None:
    status, body = chat(lab, "sec-old")
    assert status >= 500
    assert "sec-old" in json.dumps(body)


def test_proxy_refuses_a_request_with_a_wrong_key(lab: Lab, routed: None) -> None:
    request = urllib.request.Request(
        f"{lab.gateway_url}/v1/models", headers={"Authorization": "Bearer sk-wrong"}
    )
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(request, timeout=10)
    err.value.close()
    assert err.value.code >= 400


def test_restart_reports_a_broken_config_in_one_line(lab: Lab) -> None:
    before = lab.gateway_config()
    lab.set_gateway_config("model_list: [ this is not yaml\n")
    try:
        result = lab.restart_gateway()
        assert result.returncode != 0
        assert len(result.stderr.strip().splitlines()) == 1
        assert "yaml" in result.stderr.lower() or "error" in result.stderr.lower()
    finally:
        lab.set_gateway_config(before)
        assert lab.restart_gateway().returncode == 0
