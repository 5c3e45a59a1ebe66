"""A gateway config on the gateway host is read within bounds: an alias bomb of a few
hundred bytes, a thousand nested lists or a value of the wrong type make `plan`,
`inventory` and `check` say what is wrong with which file on which host, at once, never
hang or end in an internal error."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.cli.fake_fleet import GATEWAY_CONFIG, FakeFleet, make_fleet

BOMB = "\n".join(
    ["x0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    + [f"x{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    + ["model_list: []", ""]
)
HOSTILE = [
    ("alias-bomb", BOMB, "aliases expand to more than"),
    ("deep-nesting", "model_list: " + "[" * 1000 + "]" * 1000 + "\n", "nested more than"),
    (
        "params-not-a-mapping",
        "model_list:\n- model_name: a\n  litellm_params: abc\n",
        "litellm_params is not a mapping",
    ),
    (
        "fallback-an-int",
        "model_list: []\nrouter_settings:\n  fallbacks: [{a: 5}]\n",
        "fallbacks of a is not a list",
    ),
    ("self-alias", "model_list: &m [*m]\n", "refers to a value that holds it"),
]


@pytest.fixture
def fake(tmp_path: Path) -> FakeFleet:
    return make_fleet(tmp_path)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("command", ["plan", "inventory", "check"])
@pytest.mark.parametrize(("text", "said"), [h[1:] for h in HOSTILE], ids=[h[0] for h in HOSTILE])
def test_a_hostile_gateway_config_is_a_finding_naming_host_and_file(
    fake: FakeFleet, command: str, text: str, said: str
) -> None:
    assert len(BOMB) < 600
    if command == "check":  # check compares with a committed inventory
        assert fake.fleet("inventory", "--write").returncode == 0
        fake.commit("inventory")
    fake.hosts["gateway"].files[GATEWAY_CONFIG] = text
    result = fake.fleet(command)
    out = result.stdout + result.stderr
    assert "internal error" not in out
    assert result.returncode in (1, 2), out
    assert said in out and GATEWAY_CONFIG in out and "gateway" in out, out


@pytest.mark.timeout(120)
def test_a_backend_port_out_of_range_is_a_dead_alias(fake: FakeFleet) -> None:
    fake.hosts["gateway"].files[GATEWAY_CONFIG] = (
        "model_list:\n- model_name: a\n"
        "  litellm_params: {model: openai/a, api_base: 'http://10.0.0.1:99999/v1'}\n"
    )
    result = fake.fleet("inventory")
    out = result.stdout + result.stderr
    assert "internal error" not in out and "not a valid port in the URL" in out, out
