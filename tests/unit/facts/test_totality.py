"""The parsers fed by docker, the apply journal and HTTP answers never raise, on any JSON
shape or text: a fact they cannot read is missing, not an error."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleet.facts.compose_file import parse_compose_services
from fleet.facts.docker_inspect import parse_docker_inspect
from fleet.facts.instance import Instance
from fleet.facts.journal import last_applied, unfinished
from fleet.facts.openai_models import model_ids
from fleet.facts.script import split_sections
from fleet.observed.assemble import assemble_host
from fleet.runtimes.compose import COMPOSE

FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=10,  # a journal line is one small object: deeper trees only cost drawing
)
KEYS = st.sampled_from(
    [
        "Id",
        "Name",
        "State",
        "Config",
        "HostConfig",
        "Path",
        "Args",
        "Image",
        "RestartCount",
        "NetworkSettings",
        "Labels",
        "ExitCode",
        "Pid",
        "Status",
    ]
)
# Any JSON, its objects keyed by the names docker inspect uses or by any text: one
# recursion over scalars (a recursion over JSON trees drew the same shapes, 3x slower).
DOCKERISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.dictionaries(KEYS | st.text(max_size=8), inner, max_size=6) | st.lists(inner, max_size=4)
    ),
    max_leaves=30,
)


@FAST
@given(DOCKERISH, DOCKERISH)
def test_docker_inspect_takes_any_json(containers: object, images: object) -> None:
    facts = parse_docker_inspect(json.dumps(containers), json.dumps(images))
    assert all(isinstance(f, Instance) for f in facts)


@FAST
@given(st.text())
def test_text_parsers_take_any_text(text: str) -> None:
    parse_docker_inspect(text, text)
    parse_compose_services(text)
    unfinished(text)
    model_ids(text)
    split_sections(text)
    assemble_host("h", text, COMPOSE)
    assemble_host("h", f"{text}\n@@FLEET end\n", COMPOSE)


@FAST
@given(st.lists(JSON, max_size=6))
def test_journal_takes_any_json_lines(lines: list[object]) -> None:
    unfinished("\n".join(json.dumps(line) for line in lines))


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        ({"Id": "a", "State": {"ExitCode": "137"}}, {"exit_code": 137}),
        ({"Id": "a", "State": {"ExitCode": -1, "Pid": None}}, {"exit_code": -1, "pid": 0}),
        ({"Id": "a", "State": {"ExitCode": "oops"}}, {"exit_code": 0}),
        ({"Id": "a", "State": "running"}, {"state": "unknown"}),
        (
            {"Id": "a", "Config": {"Labels": ["fleet.seat=x", "odd"]}},
            {"labels": {"fleet.seat": "x", "odd": ""}},
        ),
        ({"Id": "a", "Config": {"Labels": "x"}}, {"labels": {}}),
        ({"Id": "a", "Args": "serve"}, {"argv": ()}),
        (
            {"Id": "a", "HostConfig": {"DeviceRequests": [{"Capabilities": "gpu"}]}},
            {"gpu_request": ()},
        ),
    ],
    ids=[
        "exit-code-as-text",
        "negative-exit-null-pid",
        "exit-code-garbage",
        "state-as-text",
        "labels-as-list",
        "labels-as-text",
        "args-as-text",
        "capabilities-as-text",
    ],
)
def test_odd_docker_inspect_shapes(item: dict[str, object], expected: dict[str, object]) -> None:
    (fact,) = parse_docker_inspect(json.dumps([item]))
    assert {key: getattr(fact, key) for key in expected} == expected


@pytest.mark.parametrize(
    ("payload", "ids"),
    [
        (
            '{"object": "list", "data": [{"id": "flash"}, {"id": "summarizer"}]}',
            ("flash", "summarizer"),
        ),
        ({"data": [{"id": 7}, {"name": "no id"}, "x"]}, ("7",)),
        ({"data": "none"}, None),
        ("<html>502</html>", None),
        ([], None),
    ],
    ids=["vllm-list", "odd-items", "data-not-a-list", "not-json", "not-an-object"],
)
def test_model_ids(payload: object, ids: tuple[str, ...] | None) -> None:
    assert model_ids(payload) == ids


@pytest.mark.parametrize(
    ("lines", "applied"),
    [
        ([], None),
        (['{"at": "T1", "step": "begin", "commit": "aaa"}'], None),
        (
            [
                '{"at": "T1", "step": "finished", "commit": "aaa"}',
                '{"at": "T2", "step": "begin", "commit": "bbb"}',
                '{"at": "T3", "step": "rolled-back"}',
            ],
            ("aaa", "T1"),
        ),
        (['{"at": "T1", "step": "finished", "commit": "aaa"}', "7", "{"], ("aaa", "T1")),
        (['{"at": "T1", "step": "finished"}'], None),
    ],
    ids=["empty", "never-finished", "rolled-back-keeps-the-last", "noise-after", "no-commit"],
)
def test_last_applied_commit(lines: list[str], applied: tuple[str, str] | None) -> None:
    assert last_applied("\n".join(lines)) == applied
