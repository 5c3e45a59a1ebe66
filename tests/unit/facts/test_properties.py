"""No parser raises: on arbitrary, truncated, garbled, interleaved or empty input."""

from __future__ import annotations

import json
import random
from collections.abc import Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleet.engines import parse_engine_argv
from fleet.engines.llamacpp.log import LlamaCppReport, parse_llamacpp_log
from fleet.engines.vllm.log import EngineReport, parse_vllm_log
from fleet.facts.argv import EngineArgs, parse_human_int
from fleet.facts.cgroup import parse_cgroup
from fleet.facts.kv_estimate import estimate_kv_bytes_per_token, estimate_kv_tokens
from fleet.facts.model_config import ModelFacts, parse_hf_quant_config, parse_model_config
from fleet.facts.nvidia_smi import parse_compute_apps, parse_gpu_query, parse_nvidia_smi_table
from fleet.facts.provenance import Provenance, parse_provenance
from tests.conftest import CORPUS
from tests.unit.facts import samples

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def corpus_texts(folder: str) -> list[str]:
    return [path.read_text() for path in sorted((CORPUS / folder).iterdir())]


# Besides the corpus files, the shapes the parsers rejoin or reformat: hard-wrapped logs,
# a start refused in both error forms, older llama.cpp KV lines.
WRAPPED = [samples.hard_wrap(text, 80) for text in corpus_texts("vllm-logs")[:4]]
REFUSED = [
    samples.MAX_LEN_REJECTED,
    samples.max_len_plain(),
    samples.hard_wrap(samples.MAX_LEN_REJECTED, 136, 147),
]
OLD_KV = [
    samples.old_kv_lines(
        "llama_kv_cache_init:        CPU KV buffer size =   135.00 MiB",
        "llama_new_context_with_model: KV self size  =  135.00 MiB, K (f16):   67.50 MiB, "
        "V (f16):   67.50 MiB",
    ),
    samples.old_kv_lines("llama_new_context_with_model: kv self size  =  135.00 MB"),
]
VLLM = corpus_texts("vllm-logs") + WRAPPED + REFUSED
LLAMA = corpus_texts("llamacpp-logs") + OLD_KV
CONFIGS = corpus_texts("model-configs")
SMI = corpus_texts("nvidia-smi")
ALL = VLLM + LLAMA + CONFIGS + SMI

TextParser = Callable[[str], object]
PARSERS: list[TextParser] = [
    parse_vllm_log,
    parse_llamacpp_log,
    parse_model_config,
    parse_hf_quant_config,
    parse_gpu_query,
    parse_compute_apps,
    parse_nvidia_smi_table,
    parse_cgroup,
    parse_provenance,
]


def check_all(text: str) -> None:
    """Every text parser returns its model (or None/tuple) for the text."""
    results = {parse: parse(text) for parse in PARSERS}  # each parser once: they are pure
    assert isinstance(results[parse_vllm_log], EngineReport)
    assert isinstance(results[parse_llamacpp_log], LlamaCppReport)
    assert isinstance(results[parse_provenance], Provenance)
    facts = results[parse_model_config]
    assert isinstance(facts, ModelFacts)
    estimate_kv_bytes_per_token(facts)


@FAST
@given(st.text())
def test_arbitrary_text(text: str) -> None:
    check_all(text)


@FAST
@given(st.sampled_from(ALL), st.data())
def test_truncated_corpus_files(text: str, data: st.DataObject) -> None:
    cut = data.draw(st.integers(min_value=0, max_value=len(text)))
    start = data.draw(st.integers(min_value=0, max_value=cut))
    check_all(text[:cut])
    check_all(text[start:cut])


@FAST
@given(
    st.sampled_from(ALL), st.lists(st.tuples(st.integers(0, 10**6), st.characters()), max_size=40)
)
def test_garbled_corpus_files(text: str, edits: list[tuple[int, str]]) -> None:
    chars = list(text)
    for position, char in edits:
        if chars:
            chars[position % len(chars)] = char
    check_all("".join(chars))


@FAST
@given(st.sampled_from(VLLM + LLAMA), st.sampled_from(VLLM + LLAMA), st.randoms())
def test_interleaved_logs(first: str, second: str, rng: random.Random) -> None:
    """Two engines' lines mixed, as several workers or containers write to one stream."""
    lines = first.splitlines() + second.splitlines()
    rng.shuffle(lines)
    check_all("\n".join(lines))


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=30,
)
CONFIG_KEYS = st.sampled_from(
    [
        "architectures",
        "model_type",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "hidden_size",
        "head_dim",
        "kv_lora_rank",
        "qk_rope_head_dim",
        "layer_types",
        "full_attention_interval",
        "sliding_window",
        "sliding_window_pattern",
        "cross_attention_layers",
        "quantization_config",
        "text_config",
        "config_groups",
        "quant_method",
        "weights",
        "input_activations",
        "kv_cache_scheme",
    ]
)


@FAST
@given(st.dictionaries(CONFIG_KEYS, JSON, max_size=12))
def test_odd_config_values(config: dict[str, object]) -> None:
    text = json.dumps(config)
    facts = parse_model_config(text, hf_quant_config=json.dumps({"quantization": config}))
    for dtype in ("auto", "fp8", "float32", "nvfp4", ""):
        estimate_kv_bytes_per_token(facts, dtype, 1)
        estimate_kv_tokens(facts, 1.5, dtype, 2)


FLAG_WORDS = st.sampled_from(
    [
        "vllm",
        "serve",
        "llama-server",
        "python3",
        "-m",
        "vllm.entrypoints.openai.api_server",
        "sh",
        "-c",
        "--model",
        "--port",
        "--port=",
        "--served-model-name",
        "--max-model-len",
        "--kv-cache-memory-bytes",
        "--speculative-config",
        "--speculative-config.",
        "--speculative-config.method",
        "-tp",
        "-ngl",
        "-c",
        "auto",
        "10G",
        "1.5K",
        "{",
        '{"method": "mtp"}',
        "=",
        "",
    ]
)


@FAST
@given(st.lists(FLAG_WORDS | st.text(max_size=12), max_size=20))
def test_argv_never_raises(argv: list[str]) -> None:
    assert isinstance(parse_engine_argv(argv), EngineArgs)
    for word in argv:
        parse_human_int(word)
