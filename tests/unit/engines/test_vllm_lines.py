"""vllm_lines: hard-wrapped corpus logs read as the unwrapped ones; worker prefixes' ranks."""

from __future__ import annotations

import pytest

from fleet.engines.vllm.lines import (
    in_rank_order,
    log_lines,
    messages,
    rank_of,
    unwrap,
    worker_key,
)
from fleet.engines.vllm.log import parse_vllm_log
from tests.unit.facts.samples import MAX_LEN_REJECTED, VLLM_LOGS, hard_wrap, max_len_plain

CORPUS_LOGS = sorted(path.name for path in VLLM_LOGS.iterdir())
# (first-piece width, width): terminals at 80 and 120 columns, a wide one, and the shape
# of the real wrapped 0.10.1.1 log SOURCES.md describes (first pieces 136, the rest 147).
WIDTHS = [(80, 80), (120, 120), (200, 200), (136, 147)]


def short(name: str) -> str:
    return name.split("_")[0] + "-" + name.split("_")[2][:18]


WRAPPED = [
    pytest.param(name, first, width, id=f"{short(name)}-{first}/{width}")
    for name in CORPUS_LOGS
    for first, width in WIDTHS
]


@pytest.mark.parametrize(("name", "first", "width"), WRAPPED)
def test_hard_wrapped_corpus_log_reads_as_unwrapped(name: str, first: int, width: int) -> None:
    text = (VLLM_LOGS / name).read_text()
    wrapped = hard_wrap(text, width, first)
    assert max(len(line) for line in wrapped.splitlines()) <= width
    assert len(wrapped.splitlines()) > len(text.splitlines())  # something was cut
    assert parse_vllm_log(wrapped) == parse_vllm_log(text)


@pytest.mark.parametrize(
    "text",
    [MAX_LEN_REJECTED, max_len_plain()],
    ids=["max-len-rejected-pydantic", "max-len-rejected-plain"],
)
@pytest.mark.parametrize(("first", "width"), WIDTHS, ids=[f"{f}/{w}" for f, w in WIDTHS])
def test_hard_wrapped_failed_start_reads_as_unwrapped(text: str, first: int, width: int) -> None:
    report = parse_vllm_log(hard_wrap(text, width, first))
    assert report == parse_vllm_log(text)
    assert report.errors


TP4 = "v0.9.2_v1_qwen3-14b_tp4_multiproc-workers.log"


@pytest.mark.parametrize(
    ("line_start", "cut_after", "field", "expected"),
    [
        ("Initializing a V1 LLM engine", "tensor_parallel_si", "tensor_parallel_size", 4),
        ("Initializing a V1 LLM engine", "max_seq_len=81", "max_model_len", 8192),
        ("GPU KV cache size", "GPU KV cache size: 335,", "kv_cache_tokens", 335344),
        ("Model loading took", "Model loading took 6.94", "weights_gib", 6.9456),
    ],
    ids=["key-cut", "number-cut", "thousands-cut", "decimal-cut"],
)
def test_a_cut_inside_a_key_or_number_is_rejoined(
    line_start: str, cut_after: str, field: str, expected: object
) -> None:
    """The whole log wrapped at the width that cuts the first such line right there."""
    text = (VLLM_LOGS / TP4).read_text()
    line = next(line for line in text.splitlines() if line_start in line)
    width = line.index(cut_after) + len(cut_after)
    wrapped = hard_wrap(text, width)
    assert line[:width].endswith(cut_after) and line[:width] in wrapped.splitlines()
    report = parse_vllm_log(wrapped)
    assert getattr(report, field) == expected
    assert report == parse_vllm_log(text)


@pytest.mark.parametrize("name", CORPUS_LOGS, ids=[short(name) for name in CORPUS_LOGS])
def test_an_unwrapped_corpus_log_is_left_as_it_is(name: str) -> None:
    lines = (VLLM_LOGS / name).read_text().splitlines()
    assert unwrap(lines) == lines


def test_traceback_lines_are_never_glued_on() -> None:
    """A wrap width that a traceback line fills exactly: the next frame has its prefix."""
    text = MAX_LEN_REJECTED
    frame = next(line for line in text.splitlines() if line.endswith("in __init__"))
    pieces = hard_wrap(text, len(frame)).splitlines()
    assert frame in pieces
    rejoined = log_lines(hard_wrap(text, len(frame)))
    assert rejoined == [line.rstrip() for line in text.splitlines()]


def test_one_long_line_is_not_evidence_of_wrapping() -> None:
    """A header-less line after the longest line, seen once, is a line of its own."""
    lines = ["INFO 12-01 10:00:00 [x.py:1] " + "a" * 100, "Traceback (most recent call last):"]
    assert unwrap(lines) == lines


@pytest.mark.parametrize(
    ("prefix", "rank"),
    [
        ("(VllmWorker rank=2 pid=13374)", (0, 0, 0, 0, 0, 2)),
        ("(Worker_PP1_TP0 pid=2217869)", (0, 1, 0, 0, 0, 0)),
        ("(Worker_PP0_TP2 pid=72464)", (0, 0, 0, 2, 0, 0)),
        ("(Worker_TP3 pid=55290)", (0, 0, 0, 3, 0, 0)),
        ("(EngineCore_DP0 pid=417364)", (0, 0, 0, 0, 0, 0)),
        ("(VllmWorkerProcess pid=1064416)", None),
        ("(RayWorkerWrapper pid=345, ip=10.42.11.243)", None),
        ("", None),
    ],
    ids=["vllmworker-rank", "pp1-tp0", "pp0-tp2", "tp3", "dp0", "v0-worker", "ray", "none"],
)
def test_rank_of_prefix(prefix: str, rank: tuple[int, ...] | None) -> None:
    assert rank_of(prefix) == rank


def test_figures_in_rank_order_unranked_after_in_log_order() -> None:
    figures = {
        worker_key("(Worker_PP1_TP0 pid=3)"): 3.0,
        worker_key("(VllmWorkerProcess pid=9)"): 9.0,
        worker_key("(Worker_PP0_TP1 pid=2)"): 2.0,
        worker_key(""): 0.5,
        worker_key("(Worker_PP0_TP0 pid=1)"): 1.0,
    }
    assert in_rank_order(figures) == (1.0, 2.0, 3.0, 9.0, 0.5)


def test_message_keeps_the_prefix_apart() -> None:
    lines = [
        "(VllmWorker rank=1 pid=13373) INFO 07-12 09:43:30 [gpu_model_runner.py:1801] "
        "Model loading took 6.9456 GiB and 5.574819 seconds",
        "(APIServer pid=1)     For further information visit https://errors.pydantic.dev",
    ]
    (first, second) = messages(lines)
    assert first == ("INFO", "(VllmWorker rank=1 pid=13373)", lines[0].split("] ", 1)[1])
    assert second == (None, "(APIServer pid=1)", lines[1].split(")", 1)[1].strip())
