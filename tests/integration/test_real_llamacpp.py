"""The real llama-server (b11434, built by tests/lab/install-llamacpp.sh) held to the
contract of tests/lab/real/contract_llamacpp.py, as plain processes serving the lab's
tiny GGUF models: what fleet reads off its startup log equals what its /props, /slots
and /metrics report, at the default verbosity and at `-lv 4`, with and without a draft
model. And the draft flags fleet renders for a seat on this build make it draft, where
the flags fleet rendered before (`--draft-max`) make it exit 1 (and a draft model without
`--spec-type draft-simple` is loaded but never drafts). And the buffers plan predicts
for a seat from its GGUF's head are those it logs, within 5%. And the recorded iswa and
MTP logs the stand-in is held to (tests/corpus/llamacpp-logs) are what it still logs.
"""

from __future__ import annotations

import json
import socket
import subprocess
import urllib.request
from pathlib import Path

import pytest

from fleet.engines import engine_for, predict_memory
from fleet.engines.llamacpp import render_args
from fleet.facts.engine_metrics import sum_samples
from fleet.facts.gguf import parse_gguf_header
from fleet.facts.host_facts import GGUF_HEAD_BYTES
from tests.lab.real import llamacpp, require
from tests.lab.real.contract_llamacpp import fetch, mismatches
from tests.unit.engines.test_llamacpp_flags import drafted_seat
from tests.unit.engines.test_llamacpp_memory import cpu_seat, logged

# At the default verbosity (3) b11434 logs the slots and their context, not its build,
# KV cache or drafter settings (those are traces, -lv 4).
DRAFTING = (
    "--spec-type",
    "draft-simple",
    "--spec-draft-model",
    "{draft}",
    "--spec-draft-n-max",
    "4",
)
QUIET = ("build", "KV cells", "KV context (n_ctx)", "KV types", "draft tokens (n_max)")
CASES = {
    "default-verbosity": ((), QUIET),
    "lv4": (("-lv", "4"), ()),
    "lv4-q8-cache-four-slots": (
        ("-lv", "4", "-c", "8192", "-np", "4", "-ctk", "q8_0", "-ctv", "q8_0"),
        (),
    ),
    "lv4-unified": (("-lv", "4", "-c", "2048", "-np", "3", "--kv-unified"), ()),
    "lv4-drafter": (("-lv", "4", *DRAFTING), ()),
    "default-drafter": (DRAFTING, QUIET),
}


@pytest.fixture(autouse=True)
def installed() -> None:
    require(llamacpp.INSTALLED, "llama-server")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def chat(port: int, text: str, tokens: int = 16) -> dict[str, object]:
    body = json.dumps(
        {"messages": [{"role": "user", "content": text}], "max_tokens": tokens, "seed": 1}
    ).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/chat/completions",
        data=body,
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as reply:
        return dict(json.loads(reply.read()))


# Contexts within the tiny model's n_ctx_train (2048): a slot's context is capped there
# (b11434 logs `n_ctx_seq (3072) > n_ctx_train (2048)` and its slots hold 2048).
@pytest.mark.parametrize(("flags", "unstated"), list(CASES.values()), ids=list(CASES))
def test_the_log_fleet_reads_agrees_with_the_engine(
    tmp_path: Path, flags: tuple[str, ...], unstated: tuple[str, ...]
) -> None:
    draft = str(llamacpp.draft_model_path())
    argv = ["-c", "4096", "-np", "2", "--metrics", "--slots"]
    argv += [flag.format(draft=draft) for flag in flags]
    port = free_port()
    with llamacpp.serve(port, tmp_path / "server.log", *argv):
        answers = fetch(f"http://127.0.0.1:{port}")
    log = (tmp_path / "server.log").read_text()
    assert mismatches(log, answers, argv, unstated) == []
    report = engine_for("llama.cpp").read_log(log)
    assert report.max_model_len == answers.props["default_generation_settings"]["n_ctx"]


def test_the_speculative_counters_fleet_reads_count_the_drafts(tmp_path: Path) -> None:
    draft = str(llamacpp.draft_model_path())
    argv = ["--metrics", "-lv", "4", *(flag.format(draft=draft) for flag in DRAFTING)]
    port = free_port()
    with llamacpp.serve(port, tmp_path / "server.log", *argv):
        chat(port, "Count from one to twenty.", tokens=24)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
            text = reply.read().decode()
    seat = drafted_seat(f"{llamacpp.IMAGE}:{llamacpp.TAG}")
    counts = engine_for("llama.cpp").speculative_counts(sum_samples(text), seat)
    assert counts["drafts"] > 0 and counts["draft_tokens"] >= counts["drafts"]
    assert 0 <= counts["accepted"] <= counts["draft_tokens"]


def test_the_draft_flags_fleet_renders_for_b11434_start_it(tmp_path: Path) -> None:
    seat = drafted_seat(f"{llamacpp.IMAGE}:{llamacpp.TAG}")
    args = render_args(seat)
    start = args.index("--spec-type")
    flags = args[start : start + 6]
    assert flags[0::2] == ["--spec-type", "--spec-draft-model", "--spec-draft-n-max"]
    flags[3] = str(llamacpp.draft_model_path())
    port = free_port()
    with llamacpp.serve(port, tmp_path / "server.log", "--slots", "--metrics", *flags):
        answers = fetch(f"http://127.0.0.1:{port}")
    assert all(slot["speculative"] for slot in answers.slots)


def test_a_draft_model_without_its_spec_type_never_drafts(tmp_path: Path) -> None:
    draft = str(llamacpp.draft_model_path())
    port = free_port()
    log = tmp_path / "server.log"
    with llamacpp.serve(port, log, "-lv", "4", "--slots", "--metrics", "--spec-draft-model", draft):
        answers = fetch(f"http://127.0.0.1:{port}")
    assert not any(slot["speculative"] for slot in answers.slots)
    assert "no implementations specified for speculative decoding" in log.read_text()
    argv = ["--spec-draft-model", draft]
    assert mismatches(log.read_text(), answers, argv, ("draft tokens (n_max)",)) == []


def test_the_old_draft_max_makes_b11434_exit_1(tmp_path: Path) -> None:
    argv = [str(llamacpp.binary()), "-m", str(llamacpp.model_path()), "--port", "0"]
    argv += ["--model-draft", str(llamacpp.draft_model_path()), "--draft-max", "5"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert 'error while handling argument "--draft-max": the argument has been removed' in (
        done.stdout + done.stderr
    )


def test_the_buffers_plan_predicts_are_within_5_percent_of_the_logged_ones(
    tmp_path: Path,
) -> None:
    """From the head of the file as observation reads it (its tensors' infos lie beyond the
    vocabulary, so the weights are the file's size); `-nr`: a CPU with AMX would otherwise
    repack the matrices into a second buffer, which plan does not count."""
    model = llamacpp.model_path()
    with model.open("rb") as gguf:
        header = parse_gguf_header(gguf.read(GGUF_HEAD_BYTES))
    flags = ("-ctk", "q8_0", "-ctv", "q8_0")
    seat = cpu_seat(2048, 3, flags)
    memory = predict_memory(seat, header, model.stat().st_size, "RAM")
    assert memory is not None
    log = tmp_path / "server.log"
    with llamacpp.serve(free_port(), log, "-lv", "4", "-nr", "-c", "6144", "-np", "3", *flags):
        pass
    real = logged(log.read_text())
    for part, mib in real.items():
        predicted = getattr(memory, part) / 2**20
        assert abs(predicted - mib) <= 0.05 * mib + 0.01, f"{part}: {predicted:.2f} vs {mib}"
    assert set(real) == {"weights", "kv", "compute", "output"}


@pytest.mark.parametrize(
    "stem",
    [
        "b11434_cpu_tiny-gemma3_lv4_c8192_np2_ub128_iswa",
        "b11434_cpu_tiny-qwen35moe-mtp_lv4_c8192_np2_draft-mtp",
    ],
    ids=["iswa", "hybrid-mtp"],
)
def test_the_recorded_iswa_and_mtp_logs_still_hold(tmp_path: Path, stem: str) -> None:
    """The real b11434 started again as it was recorded (tests/lab/real/
    record_llamacpp_archs.py) logs the same KV caches, recurrent state and MTP lines as its
    recording, which the stand-in's contract test compares with."""
    from tests.lab.real import record_llamacpp_archs
    from tests.unit.lab_engine.test_llamacpp_contract import facts, kv_lines

    name = record_llamacpp_archs.CASES[stem][0]
    live = record_llamacpp_archs.record(stem, tmp_path).read_text()
    corpus = Path(__file__).resolve().parents[1] / "corpus" / "llamacpp-logs"
    recorded = (corpus / f"{stem}.log").read_text()
    assert kv_lines(live, name) == kv_lines(recorded, name)
    assert facts(live) == facts(recorded)
