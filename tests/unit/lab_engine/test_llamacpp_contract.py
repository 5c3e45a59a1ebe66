"""The llama-server stand-in is held to the contract the real llama-server is held to
(tests/lab/real/contract_llamacpp.py; the real one in tests/integration/
test_real_llamacpp.py): what fleet reads off its startup log equals what its /props,
/slots and /metrics answer, so the stand-in cannot drift from what fleet reads silently."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from fleet.engines.llamacpp.log import parse_llamacpp_log
from tests.lab import models
from tests.lab.real import tinyarchs
from tests.lab.real.contract_llamacpp import Answers, fetch, mismatches
from tests.unit.lab_engine.standin import Image, StandIn, start_llama

NEW_DRAFT = ["--spec-type", "draft-simple", "--spec-draft-model", "{draft}"]
NEW_DRAFT += ["--spec-draft-n-max", "6"]
CASES = {
    "two-slots": ["-c", "8192", "-np", "2"],
    "one-slot-q8-cache": ["-c", "4096", "-np", "1", "-ctk", "q8_0", "-ctv", "q8_0"],
    "unified-cache": ["-c", "8192", "-np", "4", "--kv-unified"],
    "drafter": ["-c", "8192", "-np", "2", *NEW_DRAFT],
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
        "-lv",
        "4",  # as fleet renders it: b11434 logs its build and KV at 4 only
        *(flag.format(draft=draft) for flag in flags),
    ]
    engine = start_llama(image, argv, {})  # the stand-in's own build: b11434
    running.append(engine)
    engine.wait_healthy()
    assert mismatches(engine.log(), fetch(engine.url("")), argv) == []


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
    if build == "11434":
        argv += ["-lv", "4"]  # as the real b11434, it logs its build and KV at 4 only
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


def tiny_arch(name: str, layers: int, hidden: int, heads: int, ffn: int) -> dict[str, Any]:
    """The header of a tiny model of tests/lab/real/tinygguf.py (weights left sparse)."""
    return {
        "architecture": "llama",
        "name": name,
        "basename": name,
        "size_label": "?B",
        "block_count": layers,
        "context_length": 2048,
        "embedding_length": hidden,
        "feed_forward_length": ffn,
        "head_count": heads,
        "head_count_kv": heads,
        "head_dim": hidden // heads,
        "rope_freq_base": 10000.0,
        "rms_norm_eps": 1e-5,
        "vocab_size": 32000,
        "tie_word_embeddings": False,
        "bos_token_id": 1,
        "eos_token_id": 2,
    }


def facts(log: str) -> dict[str, object]:
    """What fleet reads off a llama-server log and the contract compares."""
    report = parse_llamacpp_log(log)
    return {
        "build": report.build,
        "KV cells": report.kv_cells,
        "KV buffer MiB": report.kv_buffer_mib,
        "slots": report.parallel_slots,
        "slot context": report.ctx_per_slot,
        "drafter k": report.draft_max,
        "method": report.speculative_method,
        "drafter KV MiB": report.draft_kv_buffer_mib,
        "recurrent state MiB": report.recurrent_state_mib,
    }


REAL_B11434 = {
    "lv4-two-slots": ("b11434_cpu_tiny-llama-4l_lv4_np2.log", []),
    "lv4-draft-simple": (
        "b11434_cpu_tiny-llama-4l_lv4_np2_draft-simple.log",
        [*NEW_DRAFT[:-1], "4"],
    ),
    "verbosity3-two-slots": ("b11434_cpu_tiny-llama-4l_verbosity3_np2.log", []),
}


@pytest.mark.parametrize(("recorded", "flags"), list(REAL_B11434.values()), ids=list(REAL_B11434))
def test_the_b11434_standin_logs_what_the_real_b11434_logged(
    image: Image,
    tmp_path: Path,
    running: list[StandIn],
    corpus: Path,
    recorded: str,
    flags: list[str],
) -> None:
    # The same tiny models and flags as the recorded real runs (tests/corpus/SOURCES.md):
    # fleet must read the same facts off the stand-in's log as off the real one.
    target, draft = tmp_path / "tiny-llama-4l.gguf", tmp_path / "tiny-llama-draft-1l.gguf"
    models.write_gguf(target, tiny_arch("tiny-llama-4l", 4, 256, 4, 512), "Q8_0")
    models.write_gguf(draft, tiny_arch("tiny-llama-draft-1l", 1, 64, 2, 128), "Q8_0")
    lv = ["-lv", "4"] if "_lv4_" in recorded else []
    argv = ["-m", str(target), "-c", "4096", "-np", "2", "--metrics", *lv]
    argv += [flag.format(draft=draft) for flag in flags]
    engine = start_llama(image, argv, {"FLEET_LAB_LLAMACPP_BUILD": "11434"}, cuda=False)
    running.append(engine)
    engine.wait_healthy()
    real = (corpus / "llamacpp-logs" / recorded).read_text()
    assert facts(engine.log()) == facts(real)


# gemma3's pattern: layers 0-4 slide over a 512-token window, layer 5 attends fully.
GEMMA3 = {
    "architecture": "gemma3",
    "name": "tiny-gemma3",
    "basename": "tiny-gemma3",
    "size_label": "?B",
    "block_count": 6,
    "context_length": 32768,
    "embedding_length": 256,
    "feed_forward_length": 512,
    "head_count": 4,
    "head_count_kv": 1,
    "head_dim": 128,
    "sliding_window": 512,
    "rope_freq_base": 1000000.0,
    "rms_norm_eps": 1e-6,
    "vocab_size": 32000,
    "tie_word_embeddings": True,
    "bos_token_id": 2,
    "eos_token_id": 1,
}
ISWA = {
    # flags: (non-SWA cells, SWA cells) per stream; f16 K and V: 1 head x 128 x 2 bytes each
    "one-slot-8k": (["-c", "8192", "-np", "1"], 8192, 1024),
    "two-slots-ubatch-128": (["-c", "8192", "-np", "2", "-ub", "128"], 4096, 768),
    "context-below-window": (["-c", "512", "-np", "1"], 512, 512),
}


@pytest.mark.parametrize("build", ["11434", "6100"])
@pytest.mark.parametrize(("flags", "full", "swa"), list(ISWA.values()), ids=list(ISWA))
def test_an_iswa_model_gets_two_caches_sized_as_b11434_sizes_them(
    image: Image,
    tmp_path: Path,
    running: list[StandIn],
    flags: list[str],
    full: int,
    swa: int,
    build: str,
) -> None:
    model = tmp_path / "tiny-gemma3.gguf"
    models.write_gguf(model, GEMMA3, "Q8_0")
    argv = ["-m", str(model), "-lv", "4", *flags]
    engine = start_llama(image, argv, {"FLEET_LAB_LLAMACPP_BUILD": build}, cuda=False)
    running.append(engine)
    engine.wait_healthy()
    log = engine.log()
    streams = int(flags[3])
    assert f"llama_kv_cache_iswa: creating non-SWA KV cache, size = {full} cells" in log
    assert f"llama_kv_cache_iswa: creating     SWA KV cache, size = {swa} cells" in log
    report = parse_llamacpp_log(log)
    row_mib = 2 * 128 * 2 * streams / (1 << 20)  # K and V of one cell in one layer, all streams
    assert report.kv_buffer_mib == pytest.approx(round((full * 1 + swa * 5) * row_mib, 2), abs=0.01)
    assert report.kv_cells == full * streams
    assert report.draft_kv_buffer_mib is None


# The real b11434 on tiny models of the lab's iswa and hybrid architectures
# (tests/lab/real/tinyarchs.py, recorded by tests/lab/real/record_llamacpp_archs.py;
# tests/corpus/SOURCES.md): the stand-in, given the same headers and flags, logs the same
# KV caches (cells, layers, streams, MiB per cache), the same MTP draft context and the
# same failure, line for line but for the timestamps and the model's path.
MTP_FLAGS = ["--spec-type", "draft-mtp", "--spec-draft-n-max", "2"]
REAL_ARCHS = {
    "gemma3-iswa-one-slot": ("tiny-gemma3_lv4_c8192_iswa", "tiny-gemma3.gguf", ["-np", "1"]),
    "gemma3-iswa-two-slots-ub128": (
        "tiny-gemma3_lv4_c8192_np2_ub128_iswa",
        "tiny-gemma3.gguf",
        ["-np", "2", "-ub", "128"],
    ),
    "qwen35moe-hybrid": (
        "tiny-qwen35moe_lv4_c8192_np2_hybrid",
        "tiny-qwen35moe.gguf",
        ["-np", "2"],
    ),
    "qwen35moe-mtp": (
        "tiny-qwen35moe-mtp_lv4_c8192_np2_draft-mtp",
        "tiny-qwen35moe-mtp.gguf",
        ["-np", "2", *MTP_FLAGS],
    ),
    "mtp-without-mtp-layers": (
        "tiny-qwen35moe_lv4_draft-mtp_no-mtp-layers",
        "tiny-qwen35moe.gguf",
        ["-np", "2", *MTP_FLAGS],
    ),
}
KV_LINE = re.compile(
    r"llama_kv_cache_iswa: creating|llama_kv_cache: +\w+ KV buffer|llama_kv_cache: size|"
    r"llama_memory_recurrent|n_rs_seq|MTP|speculative implementation|- n_max=|exiting due to|"
    r"failed to"
)


def kv_lines(log: str, model: str) -> list[str]:
    """The log's KV cache, MTP and failure lines, without timestamps and the model's path."""
    out = []
    for line in log.splitlines():
        if KV_LINE.search(line):
            text = re.sub(r"^\d+\.\d+\.\d+\.\d+ [IWE] ", "", line)
            out.append(re.sub(r"'[^']*" + re.escape(model) + "'", "'MODEL'", text))
    return out


@pytest.mark.parametrize(("stem", "name", "flags"), list(REAL_ARCHS.values()), ids=list(REAL_ARCHS))
def test_the_standin_sizes_iswa_hybrid_and_mtp_caches_as_the_real_b11434(
    image: Image,
    tmp_path: Path,
    running: list[StandIn],
    corpus: Path,
    stem: str,
    name: str,
    flags: list[str],
) -> None:
    model = tmp_path / name
    models.write_gguf(model, tinyarchs.ARCHS[name], "Q8_0")
    argv = ["-m", str(model), "-lv", "4", "-nr", "-c", "8192", *flags]
    engine = start_llama(image, argv, {}, cuda=False)
    running.append(engine)
    real = (corpus / "llamacpp-logs" / f"b11434_cpu_{stem}.log").read_text()
    if "exiting due to" in real:
        assert engine.wait_exit() == 1
    else:
        engine.wait_healthy()
    log = engine.log()
    assert kv_lines(log, name) == kv_lines(real, name)
    assert facts(log) == facts(real)
