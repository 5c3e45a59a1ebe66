"""The llama-server stand-in is held to the contract the real llama-server is held to
(tests/lab/real/contract_llamacpp.py; the real one in tests/integration/
test_real_llamacpp.py): what fleet reads off its startup log equals what its /props,
/slots and /metrics answer, so the stand-in cannot drift from what fleet reads silently."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.lab.real.contract_llamacpp import Answers, fetch, mismatches
from tests.unit.lab_engine.standin import Image, StandIn, start_llama

CASES = {
    "two-slots": ["-c", "8192", "-np", "2"],
    "one-slot-q8-cache": ["-c", "4096", "-np", "1", "-ctk", "q8_0", "-ctv", "q8_0"],
    "unified-cache": ["-c", "8192", "-np", "4", "--kv-unified"],
    "drafter": ["-c", "8192", "-np", "2", "--model-draft", "{draft}", "--draft-max", "6"],
}


@pytest.mark.parametrize("flags", list(CASES.values()), ids=list(CASES))
def test_the_standins_log_and_api_agree(
    image: Image, gguf_dir: Path, running: list[StandIn], flags: list[str]
) -> None:
    draft = str(gguf_dir / "qwen3-0.6b-q8_0.gguf")
    argv = [
        "-m",
        str(gguf_dir / "qwen3-0.6b-q4_k_m.gguf"),
        "-ngl",
        "999",
        "--metrics",
        *(flag.format(draft=draft) for flag in flags),
    ]
    engine = start_llama(image, argv, {})
    running.append(engine)
    engine.wait_healthy()
    # The stand-in's build (b6100) logs everything but the drafter's n_max.
    unstated = ("draft tokens (n_max)",)
    assert mismatches(engine.log(), fetch(engine.url("")), argv, unstated) == []


NEW_DRAFT = ["--spec-type", "draft-simple", "--spec-draft-model", "{draft}"]
NEW_DRAFT += ["--spec-draft-n-max", "6"]
BY_BUILD = {
    "b6100-old-names-draft": ("6100", ["--model-draft", "{draft}", "--draft-max", "6"], True),
    "b6100-refuses-new-names": (
        "6100",
        ["--spec-draft-model", "{draft}", "--spec-draft-n-max", "6"],
        "error: invalid argument: --spec-draft-model",
    ),
    "b11434-new-names-draft": ("11434", NEW_DRAFT, True),
    "b11434-no-spec-type-no-draft": ("11434", ["--spec-draft-model", "{draft}"], False),
    "b11434-refuses-draft-max": (
        "11434",
        ["--model-draft", "{draft}", "--draft-max", "6"],
        'error while handling argument "--draft-max": the argument has been removed',
    ),
}


@pytest.mark.parametrize(("build", "flags", "outcome"), list(BY_BUILD.values()), ids=list(BY_BUILD))
def test_the_standin_takes_the_draft_options_its_build_takes(
    image: Image,
    gguf_dir: Path,
    running: list[StandIn],
    build: str,
    flags: list[str],
    outcome: bool | str,
) -> None:
    draft = str(gguf_dir / "qwen3-0.6b-q8_0.gguf")
    argv = ["-m", str(gguf_dir / "qwen3-0.6b-q4_k_m.gguf"), "-ngl", "999", "--metrics"]
    argv += [flag.format(draft=draft) for flag in flags]
    engine = start_llama(image, argv, {"FLEET_LAB_LLAMACPP_BUILD": build})
    running.append(engine)
    if isinstance(outcome, str):
        assert engine.wait_exit() == 1
        assert outcome in engine.log()
        return
    engine.wait_healthy()
    answers = fetch(engine.url(""))
    assert all(slot["speculative"] is outcome for slot in answers.slots)
    assert mismatches(engine.log(), answers, argv, ("draft tokens (n_max)",)) == []


def test_the_contract_holds_on_the_recorded_real_b11434(corpus: Path) -> None:
    # One run of the real server (tests/corpus/SOURCES.md): its -lv 4 log, /props and
    # /slots after start-up, /metrics after a request.
    stem = "b11434_cpu_tiny-llama-4l_np2_draft-simple"
    metrics = corpus / "llamacpp-metrics"
    answers = Answers(
        props=json.loads((metrics / f"{stem}.props.json").read_text()),
        slots=json.loads((metrics / f"{stem}.slots.json").read_text()),
        metrics=(metrics / f"{stem}_after-one-request.metrics.txt").read_text(),
    )
    log = (
        corpus / "llamacpp-logs" / "b11434_cpu_tiny-llama-4l_lv4_np2_draft-simple.log"
    ).read_text()
    draft = "/opt/fleet-lab/llama-server-b11434/models/tiny-llama-draft-1l.gguf"
    argv = ["-c", "4096", "-np", "2", "--metrics", "--slots", "-lv", "4"]
    argv += ["--spec-type", "draft-simple", "--spec-draft-model", draft, "--spec-draft-n-max", "4"]
    assert mismatches(log, answers, argv) == []
    # and it can fail: another build, a third slot, a bigger k
    wrong = Answers(
        {**answers.props, "build_info": "b11435-b11434", "total_slots": 3}, answers.slots
    )
    found = mismatches(log, wrong, [*argv[:-1], "5"])
    assert [line.split(":")[0] for line in found] == [
        "build",
        "slots",
        "slots",  # /slots lists 2 where /props says 3
        "KV cells",
        "KV context (n_ctx)",
        "draft tokens (n_max)",
    ]
