"""Gateway config edits: fleet's entries as desired/, every other byte untouched."""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from fleet.gateways.litellm.config import parse_gateway_config
from fleet.gateways.litellm.render import desired_entries, render_gateway_config
from tests.conftest import CORPUS
from tests.unit.render.test_compose import example

GOLDEN = Path(__file__).parent / "golden"
Edit = Callable[[str], str]
CORPUS_CONFIGS = sorted((CORPUS / "litellm-configs").glob("*.yaml"))
assert CORPUS_CONFIGS, f"no LiteLLM configs under {CORPUS}"


def test_hand_kept_config_matches_golden() -> None:
    before = (GOLDEN / "gateway-before.yaml").read_text()
    after = render_gateway_config(before, example())
    golden = GOLDEN / "gateway-after.yaml"
    if os.environ.get("FLEET_UPDATE_GOLDEN"):
        golden.write_text(after)
    assert after == golden.read_text()


def test_entries_route_as_desired() -> None:
    fleet = example()
    text = render_gateway_config((GOLDEN / "gateway-before.yaml").read_text(), fleet)
    config = parse_gateway_config(text)
    routed = config.by_alias()
    assert routed["sec"].address == "http://127.0.0.11:8025/v1"
    assert routed["sec"].seat == "sec" and "id: fleet:sec:sec" in text
    assert routed["summarizer"].params == {"max_tokens": 256, "temperature": 0.2}
    assert routed["chat"].model == "hosted_vllm/reason"
    assert "sec-old" not in routed and "code-legacy" not in routed
    assert routed["gpt-4o"].seat is None and not routed["gpt-4o"].managed
    assert config.fallbacks == {"sec": ("chat",)}
    assert set(desired_entries(fleet)) <= set(routed)


@pytest.mark.parametrize("path", CORPUS_CONFIGS, ids=[p.name for p in CORPUS_CONFIGS])
def test_foreign_lines_survive_on_real_configs(path: Path) -> None:
    fleet = example()
    before = path.read_text()
    after = render_gateway_config(before, fleet)
    owned = set(desired_entries(fleet)) | set(
        fleet.gateway.retired_aliases if fleet.gateway else ()
    )
    spans = _entry_spans(before)
    matcher = difflib.SequenceMatcher(a=before.splitlines(), b=after.splitlines(), autojunk=False)
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            for line in range(i1 + 1, i2 + 1):
                assert spans.get(line) in owned, f"line {line} of {path.name} changed"
    assert render_gateway_config(after, fleet) == after, "a second edit must change nothing"


def _entry_spans(text: str) -> dict[int, str]:
    """1-based line -> alias of the model_list entry it belongs to."""
    entries = parse_gateway_config(text).entries
    lines = text.splitlines()
    owners: dict[int, str] = {}
    for entry, nxt in zip(entries, [*entries[1:], None], strict=True):
        assert entry.line is not None
        end = nxt.line if nxt and nxt.line else len(lines) + 1
        for line in range(entry.line, end):
            owners[line] = entry.alias
    return owners


@pytest.mark.parametrize(
    ("edit", "kept"),
    [
        (lambda t: t.replace("id: fleet:sec:sec\n", "id: fleet:sec:sec  # by hand\n", 1), True),
        (
            lambda t: t.replace("max_input_tokens: 262144\n", "max_input_tokens: 262144.0\n", 1),
            False,
        ),
    ],
    ids=["same-value-keeps-its-lines", "a-float-for-an-int-is-rewritten"],
)
def test_fleets_entry_is_rewritten_only_when_its_value_differs(edit: Edit, kept: bool) -> None:
    fleet = example()
    after = render_gateway_config((GOLDEN / "gateway-before.yaml").read_text(), fleet)
    edited = edit(after)
    assert edited != after
    assert render_gateway_config(edited, fleet) == (edited if kept else after)
