"""Fixtures: an image-like directory, a vLLM model directory and the lab's GGUF files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.lab import models
from tests.unit.lab_engine.standin import RTX_3090, Image, StandIn

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
GGUF_NAMES = (
    "qwen3-8b-q4_k_m.gguf",
    "qwen3-0.6b-q4_k_m.gguf",
    "qwen3-0.6b-q8_0.gguf",
    "not-a-model.gguf",
)


@pytest.fixture
def image(tmp_path: Path) -> Iterator[Image]:
    """A fresh image directory with one RTX 3090."""
    img = Image(tmp_path / "image")
    img.gpus([RTX_3090])
    yield img


@pytest.fixture(scope="module")
def module_image(tmp_path_factory: pytest.TempPathFactory) -> Image:
    """An image directory shared by a module's tests (one RTX 3090)."""
    img = Image(tmp_path_factory.mktemp("image"))
    img.gpus([RTX_3090])
    return img


@pytest.fixture(scope="session")
def vllm_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """/models/Llama-3.1-8B-Instruct as the lab writes it (real config, sparse shards)."""
    root = tmp_path_factory.mktemp("models")
    models.populate(root, ("Llama-3.1-8B-Instruct",), CORPUS)
    return root / "Llama-3.1-8B-Instruct"


@pytest.fixture(scope="session")
def gguf_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The lab's GGUF models, written by tests/lab/models.py."""
    root = tmp_path_factory.mktemp("gguf")
    models.populate(root, GGUF_NAMES, CORPUS)
    return root


@pytest.fixture
def running() -> Iterator[list[StandIn]]:
    """Stand-ins a test starts; all stopped afterwards."""
    started: list[StandIn] = []
    yield started
    for standin in started:
        standin.stop()
