"""The draft options fleet renders for a llama.cpp seat follow the seat's build: llama.cpp
renamed them (PR #22397: `--spec-draft-model`, `--spec-draft-n-max`) and refuses the
old `--draft-max` since, so a speculative seat on b11434 rendered with it exits 1. Both
spellings read back to the same shape, so a seat in sync stays in sync across the rename.
"""

from __future__ import annotations

import pytest

from fleet.engines import engine_for
from fleet.engines.llamacpp import observed_shape, render_args
from fleet.engines.llamacpp.argv import draft_flags, image_build, parse_args
from fleet.spec.models import Seat
from tests.unit.engines.test_llamacpp import CODER, fleet_with

DRAFTED = CODER.replace(
    "parallel: 2",
    "parallel: 2\nspeculative: {method: draft_model, draft_model: /models/draft.gguf, "
    "num_tokens: 5}",
)
OLD = ["--model-draft", "/models/draft.gguf", "--draft-max", "5"]
NEW = [
    "--spec-type",
    "draft-simple",
    "--spec-draft-model",
    "/models/draft.gguf",
    "--spec-draft-n-max",
    "5",
]


def drafted_seat(image: str) -> Seat:
    fleet, errors = fleet_with(DRAFTED.replace("ghcr.io/ggml-org/llama.cpp:server-b6100", image))
    assert errors == []
    return fleet.seats["gguf-coder"]


@pytest.mark.parametrize(
    ("image", "build"),
    [
        ("ghcr.io/ggml-org/llama.cpp:server-b6100", 6100),
        ("ghcr.io/ggml-org/llama.cpp:server-cuda-b6100", 6100),
        ("ghcr.io/ggml-org/llama.cpp:server-cuda13-b10548", 10548),
        ("ghcr.io/ggml-org/llama.cpp:server-b11434@sha256:" + "a" * 64, 11434),
        ("ghcr.io/ggml-org/llama.cpp:server", None),
        ("registry.local:5000/llama.cpp:server-vulkan", None),
        ("/usr/local/bin/llama-server", None),
    ],
    ids=["cpu", "cuda", "cuda13", "pinned-digest", "moving-tag", "registry-port", "executable"],
)
def test_the_build_is_read_off_the_image_tag(image: str, build: int | None) -> None:
    assert image_build(image) == build


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("ghcr.io/ggml-org/llama.cpp:server-b6100", OLD),
        ("ghcr.io/ggml-org/llama.cpp:server-b8959", OLD),
        ("ghcr.io/ggml-org/llama.cpp:server-b8960", NEW),
        ("ghcr.io/ggml-org/llama.cpp:server-b11434", NEW),
        ("ghcr.io/ggml-org/llama.cpp:server", NEW),
    ],
    ids=["b6100", "last-before-rename", "first-after-rename", "b11434", "moving-tag"],
)
def test_render_names_the_draft_options_the_build_accepts(image: str, expected: list[str]) -> None:
    args = render_args(drafted_seat(image))
    start = args.index(expected[0])
    assert args[start : start + len(expected)] == expected
    refused = "--draft-max" if expected is NEW else "--spec-draft-n-max"
    assert refused not in args


@pytest.mark.parametrize(
    "flags",
    [
        OLD,
        NEW,
        ["-md", "/models/draft.gguf", "--draft", "5"],
        ["--spec-draft-model=/models/draft.gguf", "--spec-draft-n-max=5"],
    ],
    ids=["old", "new", "short-and-draft", "inline-values"],
)
def test_both_spellings_read_back_as_the_same_shape(flags: list[str]) -> None:
    args = parse_args("llama.cpp", ["/app/llama-server"], ["-m", "/models/coder-27b.gguf", *flags])
    assert observed_shape(args)["speculative"] == {
        "model": "/models/draft.gguf",
        "num_speculative_tokens": 5,
    }
    assert observed_shape(args)["extra_args"] == []


@pytest.mark.parametrize("image", ["server-b6100", "server-b11434"], ids=["old", "new"])
def test_a_rendered_speculative_seat_is_in_sync_with_itself(image: str) -> None:
    seat = drafted_seat(f"ghcr.io/ggml-org/llama.cpp:{image}")
    engine = engine_for("llama.cpp")
    args = parse_args("llama.cpp", ["/app/llama-server"], render_args(seat))
    assert engine.observed_shape(args) == engine.desired_shape(seat)


def test_draft_flags_of_an_unknown_build_are_the_current_ones() -> None:
    assert draft_flags(None, "/models/draft.gguf", 5) == NEW


def test_another_spec_type_stays_an_extra_flag() -> None:
    flags = ["--spec-type", "ngram-mod", "--spec-draft-model", "/models/d.gguf"]
    args = parse_args("llama.cpp", ["/app/llama-server"], ["-m", "/m.gguf", *flags])
    assert observed_shape(args)["extra_args"] == ["--spec-type", "ngram-mod"]
