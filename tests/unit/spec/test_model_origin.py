"""A seat's `model: {path, source, ...}`: read into the seat, checked at file:line."""

from __future__ import annotations

import pytest

from fleet.spec.load import load_fleet
from fleet.spec.model_origin import ModelOrigin
from tests.unit.spec.test_validate import example_files, problems_after

COMMIT = "9216db5781bf21249d130ec9da846c4624c16137"
DIGEST = "ab" * 32
STORE = ("fleet.yaml", "", "stores:\n  nas: {address: 10.0.0.9, user: models}\n")
PLAIN = "model: /models/TinyLlama-1.1B-Chat-FP8"


def with_model(mapping: str) -> tuple[str, str, str]:
    """The coder seat's model line replaced by a mapping (indented under `model:`)."""
    return ("seats/coder.yaml", PLAIN, "model:\n" + mapping.rstrip())


def test_plain_path_keeps_working() -> None:
    loaded = load_fleet(example_files())
    assert loaded.fleet is not None
    coder = loaded.fleet.seats["coder"]
    assert (coder.model, coder.model_origin) == ("/models/TinyLlama-1.1B-Chat-FP8", None)


def test_mapping_reads_into_path_and_origin() -> None:
    files = example_files()
    files["fleet.yaml"] += STORE[2]
    files["seats/coder.yaml"] = files["seats/coder.yaml"].replace(
        PLAIN,
        "model:\n  path: /models/TinyLlama-1.1B-Chat-FP8\n"
        f"  source: store:nas:/srv/models/TinyLlama\n  revision: {COMMIT}\n",
    )
    loaded = load_fleet(files)
    assert loaded.fleet is not None, loaded.problems
    coder = loaded.fleet.seats["coder"]
    assert coder.model == "/models/TinyLlama-1.1B-Chat-FP8"
    assert coder.model_origin == ModelOrigin(
        source="store:nas:/srv/models/TinyLlama", revision=COMMIT
    )
    assert (coder.model_origin.store, coder.model_origin.location) == (
        "nas",
        "/srv/models/TinyLlama",
    )


CASES = [
    (
        "unknown-store",
        [with_model("  path: /models/X\n  source: store:nope:/srv/X\n  revision: v1\n")],
        "desired/seats/coder.yaml:8: error: store 'nope' is not in fleet.yaml stores (known: none)",
    ),
    (
        "bad-source-syntax",
        [with_model("  path: /models/X\n  source: ftp://x/y\n")],
        "desired/seats/coder.yaml:8: error: model.source: source 'ftp://x/y' is neither",
    ),
    (
        "unknown-key-in-model",
        [STORE, with_model("  path: /models/X\n  source: store:nas:/srv/X\n  revison: v1\n")],
        "desired/seats/coder.yaml:9: error: unknown key 'revison' in model "
        "(did you mean 'revision'?)",
    ),
    (
        "missing-path",
        [STORE, with_model("  source: store:nas:/srv/X\n  revision: v1\n")],
        "desired/seats/coder.yaml:6: error: missing required key 'model' (or model.path)",
    ),
    (
        "sha256-and-manifest",
        [
            STORE,
            with_model(
                f"  path: /models/X\n  source: store:nas:/srv/X\n  sha256: {DIGEST}\n"
                f"  manifest: {{config.json: {{size: 10}}}}\n"
            ),
        ],
        "desired/seats/coder.yaml:6: error: model: give sha256 (a single file) or manifest",
    ),
    (
        "sha256-of-a-directory",
        [STORE, with_model(f"  path: /models/X\n  source: store:nas:/srv/X\n  sha256: {DIGEST}\n")],
        "desired/seats/coder.yaml:9: error: sha256 is a single file's digest",
    ),
    (
        "bad-digest",
        [
            STORE,
            with_model("  path: /models/X.gguf\n  source: store:nas:/srv/X.gguf\n  sha256: xyz\n"),
        ],
        "desired/seats/coder.yaml:9: error: model.sha256:",
    ),
    (
        "hf-branch-warns",
        [with_model("  path: /models/X\n  source: hf://Qwen/Qwen3-8B@main\n")],
        "desired/seats/coder.yaml:8: warning: model source hf://Qwen/Qwen3-8B@main revision "
        "'main' is a branch or tag that can move: pin a commit",
    ),
    (
        "hf-no-revision-warns",
        [with_model("  path: /models/X\n  source: hf://Qwen/Qwen3-8B\n")],
        "desired/seats/coder.yaml:8: warning: model source hf://Qwen/Qwen3-8B has no revision",
    ),
    (
        "store-unpinned-warns",
        [STORE, with_model("  path: /models/X\n  source: store:nas:/srv/X\n")],
        "desired/seats/coder.yaml:8: warning: model source store:nas:/srv/X has no revision, "
        "sha256 or manifest",
    ),
    (
        "hf-literal-token",
        [with_model(f"  path: /models/X\n  source: hf://Qwen/Qwen3-8B@{COMMIT}\n  token: abc\n")],
        "desired/seats/coder.yaml:9: error: 'token' holds a literal value",
    ),
    (
        "store-token",
        [STORE, with_model("  path: /models/X\n  source: store:nas:/srv/X\n  token: ${T}\n")],
        "desired/seats/coder.yaml:6: error: model: token is for hf:// sources",
    ),
    (
        "revision-disagrees",
        [with_model(f"  path: /models/X\n  source: hf://Qwen/Q@main\n  revision: {COMMIT}\n")],
        "desired/seats/coder.yaml:6: error: model: source says @main but revision is",
    ),
    (
        "model-origin-key",
        [("seats/coder.yaml", PLAIN, PLAIN + "\nmodel_origin: {source: hf://a/b}")],
        "desired/seats/coder.yaml:1: error: write the model's source under `model:`",
    ),
]


@pytest.mark.parametrize(("edits", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_model_origin_problems(edits: list[tuple[str, str, str]], expected: str) -> None:
    shown = [str(p) for p in problems_after(edits)]
    assert any(line.startswith(expected) for line in shown), shown


def test_pinned_sources_are_clean() -> None:
    edits = [
        STORE,
        with_model(
            f"  path: /models/X\n  source: hf://Qwen/Qwen3-8B@{COMMIT}\n  token: ${{HF_TOKEN}}\n"
        ),
        (
            "seats/embed.yaml",
            "model:",
            "model:\n  source: store:nas:/srv/E\n  revision: r1\n  path:",
        ),
    ]
    assert [str(p) for p in problems_after(edits)] == []


def test_schema_offers_the_path_or_the_mapping() -> None:
    from fleet.report.schema import fleet_schema

    seat = fleet_schema("seat")
    kinds = [option["type"] for option in seat["properties"]["model"]["anyOf"]]
    assert kinds == ["string", "object"]
    assert seat["properties"]["model"]["anyOf"][1]["required"] == ["path", "source"]
    assert "model_origin" not in seat["properties"], "written under model:, never on its own"
