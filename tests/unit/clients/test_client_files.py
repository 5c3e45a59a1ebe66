"""What apply writes for clients: the config's key check line, a client's environment file."""

from __future__ import annotations

import pytest

from fleet.errors import GatewayError
from fleet.facts.client_keys import delivered_hash, env_value, hash_key
from fleet.gateways.keyfile import with_variable, without_variable
from fleet.gateways.litellm.config import read_config
from fleet.gateways.litellm.render import splice_custom_auth

SPLICES = [
    (
        "under-general-settings",
        "model_list: []\ngeneral_settings:\n  # keys\n  master_key: os.environ/K\n",
        "model_list: []\ngeneral_settings:\n  custom_auth: fleet_auth.user_api_key_auth\n"
        "  # keys\n  master_key: os.environ/K\n",
    ),
    (
        "appended",
        "model_list: []  # mine\n",
        "model_list: []  # mine\ngeneral_settings:\n  custom_auth: fleet_auth.user_api_key_auth\n",
    ),
    (
        "already-there",
        "general_settings:\n    custom_auth: fleet_auth.user_api_key_auth\n",
        "general_settings:\n    custom_auth: fleet_auth.user_api_key_auth\n",
    ),
]


@pytest.mark.parametrize(
    ("text", "expected"), [c[1:] for c in SPLICES], ids=[c[0] for c in SPLICES]
)
def test_the_config_names_the_key_check_every_other_byte_kept(text: str, expected: str) -> None:
    assert splice_custom_auth(text, read_config(text)) == expected


@pytest.mark.parametrize(
    "text",
    ["general_settings:\n  custom_auth: mine.auth\n", "general_settings: {master_key: x}\n"],
    ids=["another-module", "flow-mapping"],
)
def test_a_config_fleet_cannot_add_its_key_check_to_is_refused(text: str) -> None:
    with pytest.raises(GatewayError, match="custom_auth"):
        splice_custom_auth(text, read_config(text))


ENV = 'PATH="/usr/bin:/bin"\n# the agent\nLITELLM_API_KEY=old\nLANG=C.UTF-8\n'


def test_a_delivered_variable_replaces_the_old_one_in_place() -> None:
    new = with_variable(ENV, "LITELLM_API_KEY", "sk-fleet-new")
    assert new == 'PATH="/usr/bin:/bin"\n# the agent\nLITELLM_API_KEY=sk-fleet-new\nLANG=C.UTF-8\n'
    assert with_variable(None, "K", "v") == "K=v\n"
    assert with_variable("A=1", "K", "v") == "A=1\nK=v\n"
    assert (
        without_variable(new, "LITELLM_API_KEY")
        == 'PATH="/usr/bin:/bin"\n# the agent\nLANG=C.UTF-8\n'
    )


READS = [
    ("plain", "K=abc\n", "abc"),
    ("quoted", 'K="abc"\n', "abc"),
    ("export", "export K='abc'\n", "abc"),
    ("last-wins", "K=a\nK=b\n", "b"),
    ("other-variable", "KK=a\n", None),
    ("empty", "K=\n", ""),
]


@pytest.mark.parametrize(("text", "value"), [c[1:] for c in READS], ids=[c[0] for c in READS])
def test_a_delivered_file_is_read_as_a_shell_would(text: str, value: str | None) -> None:
    assert env_value(text, "K") == value
    assert delivered_hash(text, "K") == (hash_key(value) if value else None)
