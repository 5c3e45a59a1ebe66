"""The direct path of `dump_yaml` writes exactly the bytes ruamel.yaml writes, or declines."""

from __future__ import annotations

from io import StringIO
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fleet.gateways.litellm.render import desired_entries
from fleet.yamltext import dump_yaml, make_yaml, plain_dump
from tests.unit.render.test_compose import example

TEXTS = [
    "x", "sec", "8b-chat", "http://127.0.0.11:8025/v1", "hosted_vllm/sec", "fleet:sec:sec",
    "/models/Qwen3-30B", "yes", "no", "on", "true", "null", "~", "1", "0.2", "1e3", "0o17",
    "1_000", "2024-01-01", "a b", "a: b", "a:", "-x", "#x", "", " x", "x ", "'q'", "=", "<<",
    "a=b", "a@b+c", "é", "x" * 130,
]  # fmt: skip
SCALARS = st.one_of(
    st.sampled_from(TEXTS),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=True),
    st.booleans(),
    st.none(),
)
DATA = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(TEXTS), inner),
    max_leaves=12,
)


def ruamel_text(data: Any) -> str:
    stream = StringIO()
    make_yaml().dump(data, stream)
    return stream.getvalue()


# A document's keys are written one after another, so a few keys (each value a nested
# shape of its own) find what many would, at a fraction of the drawing and dumping.
@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.sampled_from(TEXTS), DATA, min_size=1, max_size=6))
def test_direct_path_writes_what_ruamel_writes(data: dict[str, Any]) -> None:
    expected = ruamel_text(data)
    fast = plain_dump(data)
    assert fast is None or fast == expected
    assert dump_yaml(data, "# header\n") == "# header\n" + expected


def test_gateway_entries_take_the_direct_path() -> None:
    for item in desired_entries(example()).values():
        assert plain_dump(item) == ruamel_text(item)
    assert plain_dump({"sec": ["chat", "flash"]}) == "sec:\n  - chat\n  - flash\n"


def test_what_only_ruamel_writes_is_declined() -> None:
    for data in ({}, {"a": None}, {"a": "yes please"}, {"a": [[1]]}, {1: "a"}, {"a": 1e-05}):
        assert plain_dump(data) is None, data
