"""The recorded real-engine KV figures still hold: the real vLLM (CPU build) started again on
a Mamba hybrid (Granite-4.0-H's layout) and on a sliding-window model (Gemma 3's five
sliding layers to one full one) logs what tests/corpus/vllm-cpu-kv recorded, and fleet's
estimate of the live log is within 1% of both figures.

The offline test (tests/unit/facts/test_kv_real_cpu.py) holds the estimate to every
recording; this module holds the recording to the engine, so a change of the installed
engine that moves the figures shows here. Each start is `tests/lab/real/record_kv.py`'s, a
plain process (no Docker, no lab hosts) with `--enforce-eager`, its engine core and worker
in that one process: about 15 s of CPU each on an idle machine. Skipped, with the reason,
unless the real vLLM is installed (tests.lab.real.require, FLEET_REAL_ENGINES=0).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fleet.engines import vllm
from fleet.engines.vllm.log import parse_vllm_log
from fleet.facts.kv_estimate import GIB
from fleet.facts.model_config import parse_model_config
from fleet.plan.seat_layout import log_layout
from tests.lab.real import require
from tests.lab.real import vllm as real_vllm

pytestmark = pytest.mark.lab

LIVE = ("granitemoehybrid", "gemma3_text")


@pytest.mark.parametrize("case", LIVE, ids=LIVE)
def test_the_live_engine_logs_what_was_recorded(case: str, tmp_path: Path) -> None:
    require(real_vllm.INSTALLED, "vLLM")
    from tests.lab.real import record_kv

    family, flags = record_kv.CASES[case]
    log = tmp_path / f"{case}.log"
    ready, _ = record_kv.start(family, flags, log, one_process=True)
    assert ready, log.read_text()[-3000:]
    live = parse_vllm_log(log.read_text())
    recorded = parse_vllm_log((record_kv.CORPUS / f"{case}.log").read_text())
    assert (live.kv_cache_tokens, live.max_concurrency) == (
        recorded.kv_cache_tokens,
        recorded.max_concurrency,
    )
    assert live.attention_block_size == recorded.attention_block_size
    cases = json.loads((record_kv.CORPUS / "cases.json").read_text())["cases"]
    facts = parse_model_config((record_kv.CORPUS / cases[case]["config"]).read_text())
    layout = log_layout(facts, live, vllm)
    assert layout is not None and live.kv_cache_gib is not None and live.max_model_len
    budget = int(live.kv_cache_gib * GIB)
    assert live.kv_cache_tokens and live.max_concurrency
    tokens = layout.tokens(budget, live.max_model_len)
    most = round(layout.max_concurrency(budget, live.max_model_len), 2)
    assert live.kv_cache_tokens / tokens == pytest.approx(1, abs=0.01)
    assert live.max_concurrency / most == pytest.approx(1, abs=0.01)
