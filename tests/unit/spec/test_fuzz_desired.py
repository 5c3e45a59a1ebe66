"""desired/ as an attacker might write it, generated: the example fleet with one value
replaced by a hostile one (text with shell and YAML characters, control characters,
huge numbers, wrong types) or hostile bytes spliced into a file's text (anchors, aliases,
brackets, NUL). `fleet validate` and `fleet plan` on the fake hosts either pass or say
what is wrong in `file:line: severity: message` lines; never an internal error, never
more than a few seconds."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.unit.cli.fake_fleet import FakeFleet, make_fleet

FILES = ("fleet.yaml", "gateway.yaml", "hosts/tower.yaml", "seats/coder.yaml")
PROBLEM = re.compile(r"^\S+\.yaml(:\d+)?: (error|warning): [^\n]+$")
FEW_SECONDS = 5.0
SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

HOSTILE_TEXT = st.one_of(
    st.sampled_from(
        [
            "a b",
            "x;touch /tmp/pwned;#",
            "$(id)",
            "`id`",
            "${HOME}",
            "sec\n[Service]\nExecStartPre=/bin/id",
            "sec\rExecStartPre=/bin/id",
            "\x00",
            "../../etc/passwd",
            "/",
            "/var/run/docker.sock:/models/x",
            "/root/.bashrc",
            "http://u:Zq8wLx3vNp2Rt7Ks@h/",
            "--api-key",
            "9" * 5000,
            "%n%s",
            "\u202e",
        ]
    ),
    st.text(max_size=40),
)
HOSTILE_VALUE = st.one_of(
    HOSTILE_TEXT,
    st.integers(min_value=-(10**80), max_value=10**80),
    st.floats(),
    st.none(),
    st.booleans(),
    st.lists(HOSTILE_TEXT, max_size=3),
    st.dictionaries(HOSTILE_TEXT, HOSTILE_TEXT, max_size=2),
)
SPLICES = st.one_of(
    st.sampled_from(
        [
            "&a [1, 2]\n",
            "*a",
            "*nowhere",
            "[" * 200,
            "{" * 50,
            ": : :",
            "\x00",
            "\t",
            "\r",
            "!!python/object:os.system ['id']",
            "<<: *a\n",
            "- - - - -",
            '"\\0\\x1b"',
            "9" * 5000,
        ]
    ),
    st.text(max_size=20),
)


@pytest.fixture(scope="module")
def fake(tmp_path_factory: pytest.TempPathFactory) -> FakeFleet:
    return make_fleet(tmp_path_factory.mktemp("fuzz"))


def _paths(tree: Any, here: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if here:
        yield here
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from _paths(value, (*here, key))
    elif isinstance(tree, list):
        for index, item in enumerate(tree):
            yield from _paths(item, (*here, index))


def _replaced(tree: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(tree, dict):
        return {k: _replaced(v, rest, value) if k == head else v for k, v in tree.items()}
    return [_replaced(v, rest, value) if i == head else v for i, v in enumerate(tree)]


@st.composite
def mutated(draw: st.DrawFn, fake: FakeFleet) -> tuple[str, str]:
    """(file, its new text): one value replaced, or hostile text spliced in."""
    rel = draw(st.sampled_from(FILES))
    text = (fake.desired / rel).read_text()
    if draw(st.booleans()):
        tree = yaml.safe_load(text)
        path = draw(st.sampled_from(list(_paths(tree))))
        value = draw(HOSTILE_VALUE)
        return rel, yaml.safe_dump(_replaced(tree, path, value), allow_unicode=True)
    at = draw(st.integers(min_value=0, max_value=len(text)))
    return rel, text[:at] + draw(SPLICES) + text[at:]


def _run(fake: FakeFleet, rel: str, text: str, command: str) -> tuple[int, str]:
    path = fake.desired / rel
    before = path.read_text()
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        started = time.monotonic()
        result = fake.fleet(command)
        elapsed = time.monotonic() - started
    finally:
        path.write_text(before)
    assert elapsed < FEW_SECONDS, f"{command} took {elapsed:.1f} s"
    assert "internal error" not in result.stderr, result.stderr
    return result.returncode, result.stderr


@SETTINGS
@given(data=st.data())
def test_validate_passes_or_says_what_is_wrong_line_by_line(
    fake: FakeFleet, data: st.DataObject
) -> None:
    rel, text = data.draw(mutated(fake))
    code, said = _run(fake, rel, text, "validate")
    assert code in (0, 1)
    lines = [ln for ln in said.splitlines() if ln.strip()]
    if code == 1:
        assert lines and all(PROBLEM.match(ln) for ln in lines), said


@settings(SETTINGS, max_examples=25)
@given(data=st.data())
def test_plan_on_hostile_desired_is_a_plan_or_one_clear_error(
    fake: FakeFleet, data: st.DataObject
) -> None:
    rel, text = data.draw(mutated(fake))
    code, said = _run(fake, rel, text, "plan")
    assert code in (0, 1, 2), said
    assert "Traceback" not in said
