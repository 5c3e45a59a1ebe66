"""`python -m tests.lab prepare systemd|engines` (tests/lab/prepare.py): what install.sh
runs to fill the lab cache before the tests. Nothing here builds a part."""

from __future__ import annotations

import threading

import pytest

from tests.lab import prepare
from tests.lab.__main__ import parse


@pytest.mark.parametrize("what", ["systemd", "engines"])
def test_prepare_takes_systemd_or_engines(what: str) -> None:
    args = parse(["prepare", what])
    assert (args.action, args.directory) == ("prepare", what)


@pytest.mark.parametrize("argv", [["prepare"], ["prepare", "models"]], ids=["none", "unknown"])
def test_prepare_names_what_it_takes(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse(argv)
    assert exited.value.code == 2
    assert "prepare takes systemd or engines" in capsys.readouterr().err


def test_without_the_real_engines_there_is_nothing_of_theirs_to_build(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FLEET_REAL_ENGINES", "0")
    assert prepare.engine_parts() == []
    assert prepare.prepare("engines") == []


def test_parts_are_built_side_by_side_and_each_said_in_order() -> None:
    both = threading.Barrier(2, timeout=10)  # each part waits for the other: side by side
    said = prepare.run([("first", both.wait), ("second", both.wait)])
    assert [line.split(":")[0] for line in said] == ["first", "second"]
