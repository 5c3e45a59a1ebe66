"""The lab's llama.cpp server images: a tag that names a build makes the stand-in that
build (FLEET_LAB_LLAMACPP_BUILD), a moving tag leaves it its own default, b11434 (the build
of the lab's real llama-server); `server-cuda*` tags are the CUDA build."""

from __future__ import annotations

import pytest

from tests.lab.image import LLAMACPP_TAGS, llamacpp_changes

CASES = {
    "server": (None, "cpu"),
    "server-b6100": ("6100", "cpu"),
    "server-cuda": (None, "cuda"),
    "server-cuda-b6100": ("6100", "cuda"),
    "server-b11434": ("11434", "cpu"),
}


@pytest.mark.parametrize(
    ("tag", "build", "backend"), [(t, *v) for t, v in CASES.items()], ids=list(CASES)
)
def test_a_tag_naming_a_build_makes_the_standin_that_build(
    tag: str, build: str | None, backend: str
) -> None:
    steps = llamacpp_changes(f"ghcr.io/ggml-org/llama.cpp:{tag}")
    builds = [s.split("=", 1)[1] for s in steps if s.startswith("ENV FLEET_LAB_LLAMACPP_BUILD=")]
    assert builds == ([build] if build else [])
    assert f"ENV FLEET_LAB_LLAMACPP_BACKEND={backend}" in steps


def test_the_lab_tags_cover_the_old_build_and_the_moving_ones() -> None:
    # the stand-in's own build (a moving tag's) is b11434: the contract tests start it
    # without FLEET_LAB_LLAMACPP_BUILD and read b11434's facts off its log
    tags = {t.rsplit(":", 1)[1] for t in LLAMACPP_TAGS}
    assert {"server", "server-b6100", "server-cuda", "server-cuda-b6100"} <= tags
