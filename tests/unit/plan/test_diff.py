"""diff_seat: each differing field is named with what runs and what desired/ says, as the
plan shows them to a reviewer (`~ gpus: [0] -> [0, 1]`)."""

from __future__ import annotations

from typing import Any

import pytest

from fleet.plan.diff import diff_seat

COMPARED = ("engine", "gpus", "served", "speculative", "context")
DESIRED: dict[str, Any] = {
    "compared": COMPARED,
    "engine": "vllm",
    "gpus": [0, 1],
    "served": ["coder"],
    "speculative": {"method": "ngram", "k": 3},
    "context": 32768,
    "spec_hash": "same",
}


@pytest.mark.parametrize(
    ("running", "expected"),
    [
        ({}, []),
        ({"context": 32768.0}, []),
        ({"gpus": [0]}, [("gpus", [0], [0, 1])]),
        ({"gpus": [1, 0]}, [("gpus", [1, 0], [0, 1])]),
        ({"served": ["coder", "old"]}, [("served", ["coder", "old"], ["coder"])]),
        (
            {"speculative": {"method": "ngram", "k": 2}},
            [("speculative.k", 2, 3)],
        ),
        (
            {"speculative": None},
            [("speculative", None, {"method": "ngram", "k": 3})],
        ),
        (
            {"gpus": [0], "context": 8192},
            [("context", 8192, 32768), ("gpus", [0], [0, 1])],
        ),
    ],
    ids=[
        "in-sync",
        "a-float-equal-to-the-int",
        "a-gpu-added",
        "gpus-reordered",
        "a-served-name-dropped",
        "one-speculative-setting",
        "speculative-turned-on",
        "two-fields",
    ],
)
def test_each_change_names_the_field_with_both_values(
    running: dict[str, Any], expected: list[tuple[str, Any, Any]]
) -> None:
    changes = diff_seat(DESIRED, {**DESIRED, **running})
    assert [(c.field, c.old, c.new) for c in changes] == expected
