"""The stand-ins' parts without a process: spec-decode arithmetic, the stuck switch, the
shared tokenizer, llama-server's command line and its context and KV arithmetic."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.lab.engine.llamacpp.args import ArgError, parse_args
from tests.lab.engine.llamacpp.gguf import read_gguf
from tests.lab.engine.llamacpp.layout import context_sizes, plan_layout
from tests.lab.engine.scheduler import StuckSwitch
from tests.lab.engine.specdecode import DraftState, SpecDecode
from tests.lab.engine.tokens import count_prompt, tokenize_body


@pytest.mark.parametrize(("k", "rate"), [(1, 0.3), (3, 0.62), (5, 0.9), (2, 0.0), (4, 1.0)])
def test_accepted_over_drafted_is_the_configured_rate(k: int, rate: float) -> None:
    spec = SpecDecode(k, rate)
    for _ in range(7):
        state = DraftState()
        for _ in range(53):
            spec.on_token(state)
    drafts, drafted, accepted, per_pos = spec.snapshot()
    assert drafted == k * drafts
    assert abs(accepted - rate * drafted) <= 0.5
    assert sum(per_pos) == accepted
    assert per_pos == sorted(per_pos, reverse=True)


def test_the_stuck_switch_is_an_env_flag_or_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLEET_LAB_STUCK_FILE", str(tmp_path / "stuck"))
    monkeypatch.delenv("FLEET_LAB_STUCK", raising=False)
    switch = StuckSwitch.from_env()
    assert not switch.on()
    (tmp_path / "stuck").touch()
    assert switch.on()
    monkeypatch.setenv("FLEET_LAB_STUCK", "1")
    (tmp_path / "stuck").unlink()
    assert StuckSwitch.from_env().on()


def test_one_token_per_word_and_four_for_the_chat_template() -> None:
    assert count_prompt({"prompt": "a b  c"}) == 3
    assert count_prompt({"prompt": [1, 2, 3, 4]}) == 4
    assert count_prompt({"messages": [{"role": "user", "content": "a b"}]}) == 6
    assert tokenize_body({"prompt": "x y"}) == tokenize_body({"content": "x y"})


def test_llama_server_flags_env_fallbacks_and_tolerated_unknowns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LLAMA_ARG_HOST", "0.0.0.0")
    monkeypatch.setenv("LLAMA_ARG_CTX_SIZE", "2048")
    args = parse_args(
        [
            "-m",
            "/models/x.gguf",
            "-c",
            "8192",
            "--jinja",
            "--threads-http",
            "4",
            "-np",
            "4",
            "--top-k",
            "-1",
            "--alias=x",
            "-ngl",
            "-1",
            "--metrics",
        ]
    )
    assert (args.model, args.host, args.ctx_size, args.parallel) == (
        "/models/x.gguf",
        "0.0.0.0",
        8192,
        4,
    )
    assert (args.alias, args.n_gpu_layers, args.metrics) == ("x", -1, True)
    assert args.extra == ["--jinja", "--threads-http", "4", "--top-k", "-1"]
    with pytest.raises(ArgError, match="Unsupported cache type"):
        parse_args(["-ctk", "q3_k"])


def test_slots_split_the_context_unless_the_cache_is_unified(gguf_dir: Path) -> None:
    assert context_sizes(parse_args(["-c", "16384", "-np", "2"]), 40960, 2) == (16384, 8192, 2)
    assert context_sizes(parse_args(["-c", "16384", "-np", "2", "-kvu"]), 40960, 2) == (
        16384,
        16384,
        1,
    )
    assert context_sizes(parse_args(["-c", "0"]), 40960, 1) == (40960, 40960, 1)
    assert context_sizes(parse_args(["-c", "10000", "-np", "3"]), 40960, 3) == (10752, 3584, 3)
    header = read_gguf(gguf_dir / "qwen3-0.6b-q4_k_m.gguf")
    lay = plan_layout(header, parse_args(["-c", "4096", "-np", "2"]), 999, [], 2)
    assert lay.kv == {"CPU": 2 * 28 * 8 * 128 * 2 * 4096}
    assert (lay.offloaded, lay.n_ctx_seq, lay.n_stream) == (0, 2048, 2)
