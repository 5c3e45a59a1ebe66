"""parse_provenance and where the file lives.

The corpus holds no PROVENANCE.txt (operators write them by hand); the sample below is
written in the `Key: value` shape the parser documents, with prose around it.
"""

from __future__ import annotations

import pytest

from fleet.facts.provenance import (
    Provenance,
    ProvenanceEntry,
    parse_provenance,
    provenance_path,
)

SAMPLE = """\
# char-rp NVFP4
Base model: google/gemma-4-26B-A4B-it
Quantized by = llm-compressor 0.8.1
- Recipe: NVFP4, experts only (attention kept in bf16)
Source: https://huggingface.co/example/char-rp-nvfp4
revision: 3f2a9c1

https://huggingface.co/example/char-rp-nvfp4/discussions/2
Notes:
  Calibrated on 512 samples; the quantizer said: no outliers.
"""


def test_entries_in_order() -> None:
    provenance = parse_provenance(SAMPLE)
    assert provenance.entries == (
        ProvenanceEntry(key="Base model", value="google/gemma-4-26B-A4B-it"),
        ProvenanceEntry(key="Quantized by", value="llm-compressor 0.8.1"),
        ProvenanceEntry(key="Recipe", value="NVFP4, experts only (attention kept in bf16)"),
        ProvenanceEntry(key="Source", value="https://huggingface.co/example/char-rp-nvfp4"),
        ProvenanceEntry(key="revision", value="3f2a9c1"),
    )


def test_free_text_is_kept_verbatim() -> None:
    assert parse_provenance(SAMPLE).free_text == (
        "# char-rp NVFP4\n"
        "\n"
        "https://huggingface.co/example/char-rp-nvfp4/discussions/2\n"
        "Notes:\n"
        "  Calibrated on 512 samples; the quantizer said: no outliers."
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("base_model", "google/gemma-4-26B-A4B-it"),
        ("Base-Model", "google/gemma-4-26B-A4B-it"),
        ("quantized by", "llm-compressor 0.8.1"),
        ("missing", None),
    ],
    ids=["snake", "kebab", "spaces", "missing"],
)
def test_get_ignores_spelling(key: str, value: str | None) -> None:
    assert parse_provenance(SAMPLE).get(key) == value


def test_repeated_key_keeps_the_last_value() -> None:
    provenance = parse_provenance("source: a\nsource: b\n")
    assert provenance.get("source") == "b"
    assert provenance.as_dict() == {"source": "b"}


@pytest.mark.parametrize("text", ["", "\n\n", "just words\n"], ids=["empty", "blank", "prose"])
def test_no_entries(text: str) -> None:
    assert parse_provenance(text) == Provenance(free_text=text.strip("\n"))


@pytest.mark.parametrize(
    ("model_dir", "expected"),
    [
        ("/models/Qwen3-8B", "/models/Qwen3-8B.PROVENANCE.txt"),
        ("/models/Qwen3-8B/", "/models/Qwen3-8B.PROVENANCE.txt"),
    ],
    ids=["plain", "trailing-slash"],
)
def test_file_sits_beside_the_model_directory(model_dir: str, expected: str) -> None:
    assert provenance_path(model_dir) == expected
