"""The fast YAML reader reads what ruamel.yaml reads, or steps aside for it.

`read_yaml` (libyaml) must give the same plain data and the same spots (line, column,
flow style) as ruamel.yaml's round-trip loader, or None so that ruamel reads the text;
`load_fleet` must give the same fleet and the same problems at the same lines either way.
"""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError
from ruamel.yaml.nodes import ScalarNode
from ruamel.yaml.resolver import VersionedResolver, implicit_resolvers

from fleet.runtimes import validate_fleet
from fleet.spec import load
from fleet.spec.load import load_fleet
from fleet.spec.problems import Problem
from fleet.spec.ruamel_tree import located
from fleet.yaml_reader import PLAIN_SCALARS, YamlDoc, plain_tag, read_yaml
from tests.conftest import CORPUS, REPO
from tests.unit.spec.test_validate import CASES, example_files

YAML_FILES = sorted(
    [
        *(REPO / "desired").rglob("*.yaml"),
        *(CORPUS / "litellm-configs").glob("*.yaml"),
        *(CORPUS / "compose").rglob("*.y*ml"),
        *(REPO / "tests" / "unit" / "render" / "golden").glob("*.yaml"),
    ]
)


def ruamel_doc(text: str) -> YamlDoc:
    return located(YAML(typ="rt").load(StringIO(text)))


@pytest.mark.parametrize("path", YAML_FILES, ids=[p.name for p in YAML_FILES])
def test_fast_reader_matches_ruamel_on_real_files(path: Path) -> None:
    text = path.read_text()
    fast = read_yaml(text)
    if path.is_relative_to(REPO / "desired") or "litellm-configs" in path.parts:
        assert fast is not None, "desired/ and LiteLLM configs must take the fast path"
    if fast is not None:
        assert fast == ruamel_doc(text)


STEP_ASIDE = [
    ("a: !!str 5\n", "explicit tag"),
    ("a: &x 1\nb: *x\n", "anchor and alias"),
    ("a: |\n  block\n", "block scalar"),
    ("a: 2024-01-01\n", "date"),
    ("a: 0o17\n", "octal"),
    ("a: 1_000\n", "underscores"),
    ("a: 1.50\n", "float not written canonically"),
    ("a: .inf\n", "infinity"),
    ("a: 1\na: 2\n", "duplicate key"),
    ("<<: {a: 1}\n", "merge key"),
    ("1: a\n", "key that is not text"),
    ("%YAML 1.1\n---\na: yes\n", "directive"),
    ("a: 1\n---\nb: 2\n", "two documents"),
    ("a: [1\n", "bad YAML"),
]


@pytest.mark.parametrize(("text", "why"), STEP_ASIDE, ids=[why for _, why in STEP_ASIDE])
def test_fast_reader_steps_aside(text: str, why: str) -> None:
    assert read_yaml(text) is None, why


SPELLINGS = [
    "1", "-0", "017", "+5", "0x1F", "1.0", "0.2", "1e3", ".nan", "true", "False", "yes",
    "on", "~", "null", "NULL", "", "x", "8b-chat", "a b", "'quoted'", '"dq"', "http://x:1/v1",
    "2024-01-01", "[1, two]", "{a: 1}", "[]", "{}", "a: b", "'1'", "-x", "=", "<<",
]  # fmt: skip
KEYS = ["a", "b", "'a'", "true", "1", "~", "<<", '"k"', "a b"]


def _mapping_text(pairs: list[tuple[str, str]], nested: list[int]) -> str:
    lines = []
    for index, (key, value) in enumerate(pairs):
        if index in nested:
            lines += [f"{key}:", f"  - {value}", f"  - {{k: {value}}}"]
        else:
            lines.append(f"{key}: {value}")
    return "\n".join(lines) + "\n"


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(KEYS), st.sampled_from(SPELLINGS)), max_size=6),
    st.lists(st.integers(0, 5), max_size=3),
)
def test_fast_reader_reads_what_ruamel_reads(
    pairs: list[tuple[str, str]], nested: list[int]
) -> None:
    text = _mapping_text(pairs, nested)
    fast = read_yaml(text)
    try:
        slow = ruamel_doc(text)
    except YAMLError:
        assert fast is None, "ruamel rejects what the fast reader accepted"
        return
    assert fast is None or fast == slow


def _everything(files: dict[str, str]) -> tuple[object, list[Problem]]:
    loaded = load_fleet(files)
    return loaded.fleet, validate_fleet(loaded)


def _ruamel_only(
    monkeypatch: pytest.MonkeyPatch, files: dict[str, str]
) -> tuple[object, list[Problem]]:
    with monkeypatch.context() as patch:
        patch.setattr(load, "read_yaml", lambda text: None)
        return _everything(files)


def test_example_fleet_is_the_same_fleet_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = _everything(example_files())
    assert fast[0] is not None
    assert fast == _ruamel_only(monkeypatch, example_files())


@pytest.mark.parametrize("edits", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_broken_inputs_give_the_same_problems_either_way(
    monkeypatch: pytest.MonkeyPatch, edits: list[tuple[str, str, str]]
) -> None:
    files = example_files()
    for rel, old, new in edits:
        files[rel] = files.get(rel, "") + new if old == "" else files[rel].replace(old, new, 1)
    fleet, problems = _everything(files)
    assert problems, "each case is a broken input"
    assert (fleet, problems) == _ruamel_only(monkeypatch, files)


@pytest.mark.parametrize(
    ("rel", "old", "new"),
    [
        ("seats/sec.yaml", "port: 8025", "port: &p 8025"),
        ("seats/sec.yaml", "context: 262144", "context: 262_144"),
        ("seats/sec.yaml", "port: 8025", "port: 8025\nport: 8026"),
        ("seats/sec.yaml", "served_name: sec", "served_name: !!str sec"),
        ("seats/sec.yaml", "extra_args: []", "extra_args: []\nenv:\n  NOTE: |\n    two\n    lines"),
    ],
    ids=["anchor", "underscores", "duplicate-key", "tag", "block-scalar"],
)
def test_files_only_ruamel_reads_give_ruamel_results(
    monkeypatch: pytest.MonkeyPatch, rel: str, old: str, new: str
) -> None:
    files = example_files()
    files[rel] = files[rel].replace(old, new, 1) if old in files[rel] else files[rel] + new + "\n"
    assert read_yaml(files[rel]) is None
    assert _everything(files) == _ruamel_only(monkeypatch, files)


def test_plain_scalar_table_is_ruamel_s() -> None:
    """The fast reader's table of implicit types is ruamel.yaml's YAML 1.2 table, in order,
    with the same patterns and first characters (a newer ruamel.yaml that changes it fails
    here, not silently in a desired/ file)."""
    theirs = [
        (tag.rsplit(":", 1)[-1], regexp.pattern, "".join(first))
        for versions, tag, regexp, first in implicit_resolvers
        if (1, 2) in versions
    ]
    assert list(PLAIN_SCALARS) == theirs


@pytest.mark.parametrize(
    "value",
    [
        "true",
        "False",
        "1.5",
        "-2e3",
        ".inf",
        ".NaN",
        "0x1F",
        "0o17",
        "12",
        "~",
        "null",
        "",
        "<<",
        "2026-12-03",
        "2026-1-3 4:05:06",
        "=",
        "!",
        "text",
        "1_000",
        "+.5",
    ],
)
def test_plain_tag_agrees_with_ruamel(value: str) -> None:
    resolver = VersionedResolver(version=(1, 2))
    theirs = str(resolver.resolve(ScalarNode, value, (True, False))).rsplit(":", 1)[-1]
    assert (plain_tag(value) or "str") == theirs
