"""The gateway config is parsed once per text, and the fast read edits it as ruamel's did.

The splice reads positions off the parsed config; whether libyaml or ruamel.yaml parsed it
must not change one byte of the edit, and an unchanged config must be parsed only once.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fleet.errors import GatewayError
from fleet.gateways.litellm import config as gateway_config
from fleet.gateways.litellm.config import parse_gateway_config, read_config
from fleet.gateways.litellm.render import render_gateway_config
from tests.unit.plan.fakes import gateway_in_sync
from tests.unit.render.test_compose import example
from tests.unit.render.test_gateway import CORPUS_CONFIGS, GOLDEN

CONFIGS = [GOLDEN / "gateway-before.yaml", GOLDEN / "gateway-after.yaml", *CORPUS_CONFIGS]


@pytest.fixture(autouse=True)
def empty_cache() -> Iterator[None]:
    read_config.cache_clear()
    yield
    read_config.cache_clear()


def _ruamel_only(monkeypatch: pytest.MonkeyPatch, text: str) -> tuple[str, object]:
    read_config.cache_clear()
    with monkeypatch.context() as patch:
        patch.setattr(gateway_config, "read_yaml", lambda text: None)
        try:
            return render_gateway_config(text, example()), parse_gateway_config(text)
        finally:
            read_config.cache_clear()


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_fast_read_gives_the_same_edit_as_ruamel(
    monkeypatch: pytest.MonkeyPatch, path: Path
) -> None:
    text = path.read_text()
    fast = render_gateway_config(text, example()), parse_gateway_config(text)
    assert fast == _ruamel_only(monkeypatch, text)


def test_a_parsed_config_is_shared_by_its_exact_text() -> None:
    text = (GOLDEN / "gateway-before.yaml").read_text()
    assert read_config(text) is read_config(text)
    assert read_config(text + "\n") is not read_config(text)
    assert read_config(text.replace("gpt-4o", "gpt-4o-mini")) != read_config(text)


def test_an_unchanged_config_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    fleet = example()
    text = gateway_in_sync(fleet).config_text
    assert text is not None
    read_config.cache_clear()
    parsed: list[str] = []
    real = gateway_config.read_yaml

    def counting(config: str) -> object:
        parsed.append(config)
        return real(config)

    monkeypatch.setattr(gateway_config, "read_yaml", counting)
    assert render_gateway_config(text, fleet) == text
    parse_gateway_config(text)
    assert parsed == [text]


@pytest.mark.parametrize(
    "text",
    ["model_list: [\n", "model_list:\n  - a\n - b\n", "- a\n", "a: 1\na: 2\n"],
    ids=["unclosed", "bad-indent", "not-a-mapping", "duplicate-key"],
)
def test_bad_configs_fail_with_the_same_message(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    with pytest.raises(GatewayError) as fast:
        render_gateway_config(text, example())
    with pytest.raises(GatewayError) as slow:
        _ruamel_only(monkeypatch, text)
    assert str(fast.value) == str(slow.value)
