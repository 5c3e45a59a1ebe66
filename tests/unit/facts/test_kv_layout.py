"""The KV layout against what vLLM itself logs and asserts: groups, padding, the shared
pool, the hybrid block size, both logged figures.

Cases come from the corpus (a Qwen3.5-9B log with the model's config.json), from vLLM's
own tests (tests/v1/core/test_kv_cache_utils.py: `test_get_kv_cache_config_one_worker`,
`test_get_max_concurrency_for_kv_cache_config`, `test_estimate_max_model_len`) and, where
the corpus holds no log of a kind (gpt-oss, a Mamba hybrid), from vLLM's source and its
test ground truth of model geometry (tests/config/base_model_arch_groundtruth.json).
"""

from __future__ import annotations

import json
import re

import pytest

from fleet.engines.vllm.log import parse_vllm_log
from fleet.facts.kv_estimate import GIB, GroupKind, KvLayout, group_layers, kv_layout
from fleet.facts.kv_estimate import padding_layers as padding
from fleet.facts.kv_state import StateKind
from fleet.facts.model_config import AttentionKind, parse_model_config
from tests.conftest import CORPUS

QWEN35_LOG = "v0.19.0_v1_qwen3.5-9b_hybrid-gdn-vlm-text_config_offline-LLM_l40s.log"
QWEN35_CONFIG = "qwen3.5-9b_hybrid-linear-attention_nested-text_config_vlm.config.json"
FULL, SLIDING, STATE = GroupKind.FULL, GroupKind.SLIDING, GroupKind.STATE


def test_qwen35_9b_layout_is_the_one_vllm_logged() -> None:
    """vLLM 0.19.0 on Qwen3.5-9B: block size, padding and both figures, as it logged them."""
    text = (CORPUS / "vllm-logs" / QWEN35_LOG).read_text()
    report = parse_vllm_log(text)
    facts = parse_model_config((CORPUS / "model-configs" / QWEN35_CONFIG).read_text())
    layout = kv_layout(facts)
    assert layout is not None and report.kv_cache_gib is not None
    block = re.search(r"Setting attention block size to (\d+) tokens", text)
    padded = re.search(r"Padding mamba page size by ([\d.]+)%", text)
    assert block and padded
    assert layout.block_size == int(block.group(1))
    state = facts.attention.state
    assert state is not None and state.kind is StateKind.GATED_DELTA_NET
    pct = 100 * (layout.page_bytes - state.page_bytes()) / state.page_bytes()
    assert f"{pct:.2f}" == padded.group(1)
    # 8 full + 24 Gated-DeltaNet layers: groups of 8, one full and three state groups
    assert (layout.layers_per_group, layout.groups) == (8, (FULL, STATE, STATE, STATE))
    budget = int(report.kv_cache_gib * GIB)
    assert layout.tokens(budget) == report.kv_cache_tokens == 165_792
    assert report.max_concurrency is not None and report.max_model_len == 262_144
    most = layout.max_concurrency(budget, report.max_model_len)
    assert most == pytest.approx(report.max_concurrency, rel=0.005)
    # tokens / context is not the engine's figure for a hybrid model
    assert layout.tokens(budget) / report.max_model_len < report.max_concurrency / 3


def test_a_smaller_kv_dtype_raises_the_hybrid_block_size() -> None:
    """fp8 halves an attention token, so twice the tokens fill one state page (1056 for
    Qwen3.5-9B, as vLLM logs `Setting attention block size to 1056 tokens`)."""
    facts = parse_model_config((CORPUS / "model-configs" / QWEN35_CONFIG).read_text())
    layout = kv_layout(facts, "fp8")
    assert layout is not None and layout.block_size == 1056


PAGE = 16 * 2 * 64 * 4 * 2  # vLLM's test spec: mem_per_block_per_layer
# test_get_kv_cache_config_one_worker: (id, layers per kind, memory in pages, group size,
# group kinds, padding layers, num_blocks)
GROUPINGS = [
    ("all-full", {FULL: 2}, 2 * 32, 2, (FULL,), 0, 32),
    ("all-sliding", {SLIDING: 2}, 2 * 32, 2, (SLIDING,), 0, 32),
    ("full-and-sliding", {FULL: 1, SLIDING: 1}, 2 * 32, 1, (FULL, SLIDING), 0, 64),
    ("2-full-4-sliding", {FULL: 2, SLIDING: 4}, 2 * 32, 2, (FULL, SLIDING, SLIDING), 0, 32),
    (
        "3-full-7-sliding-padded-to-9",
        {FULL: 3, SLIDING: 7},
        3 * 32,
        3,
        (FULL, SLIDING, SLIDING, SLIDING),
        2,
        32,
    ),
    # "a typical case for gpt-oss eagle": under 1.5x, so groups of the most
    ("6-full-5-sliding-padded-to-6", {FULL: 6, SLIDING: 5}, 6 * 32, 6, (FULL, SLIDING), 1, 32),
]


@pytest.mark.parametrize(
    ("counts", "pages", "size", "kinds", "padded", "blocks"),
    [g[1:] for g in GROUPINGS],
    ids=[g[0] for g in GROUPINGS],
)
def test_grouping_as_vllms_own_tests_expect(
    counts: dict[GroupKind, int],
    pages: int,
    size: int,
    kinds: tuple[GroupKind, ...],
    padded: int,
    blocks: int,
) -> None:
    assert group_layers(counts) == (size, kinds)
    assert padding(counts) == padded
    layout = KvLayout(block_size=16, page_bytes=PAGE, layers_per_group=size, groups=kinds)
    assert layout.num_blocks(PAGE * pages) == blocks


# test_get_max_concurrency_for_kv_cache_config: 32 layers of 32 heads x 128 at fp16, 16,384
# tokens per request, 1,024 batched tokens; (id, groups, num_blocks, Maximum concurrency)
CONCURRENCY = [
    ("full-attention", (FULL,), int(1024 * 1.5), 1.5),
    ("sliding-window-1024", (SLIDING,), 129 * 3, 3.0),
    ("hybrid", (FULL, SLIDING), (1024 + 129) * 3, 3.0),
]


@pytest.mark.parametrize(
    ("groups", "blocks", "expected"), [c[1:] for c in CONCURRENCY], ids=[c[0] for c in CONCURRENCY]
)
def test_max_concurrency_as_vllms_own_test_expects(
    groups: tuple[GroupKind, ...], blocks: int, expected: float
) -> None:
    layout = KvLayout(
        block_size=16,
        page_bytes=16 * 2 * 32 * 128 * 2,
        layers_per_group=32,
        groups=groups,
        sliding_window=1024,
        batched_tokens=1024,
    )
    assert layout.max_concurrency(blocks * layout.block_bytes, 16_384) == expected


def test_one_request_fits_the_budget_vllms_estimate_max_model_len_gives() -> None:
    """test_estimate_max_model_len: 32 layers x 32 KV heads x 128 at fp16 in 8 GiB hold one
    request of 16,384 tokens and not one of 16,385."""
    config = {"num_hidden_layers": 32, "num_key_value_heads": 32, "head_dim": 128}
    layout = kv_layout(parse_model_config(json.dumps(config)))
    assert layout is not None
    assert layout.request_bytes(16_384) <= 8 * GIB < layout.request_bytes(16_385)


# gpt-oss-20b, as vLLM's ground truth states it (24 layers, 8 KV heads of 64) with the
# config's alternating layer_types and 128-token window.
GPT_OSS = {
    "model_type": "gpt_oss",
    "num_hidden_layers": 24,
    "num_key_value_heads": 8,
    "head_dim": 64,
    "sliding_window": 128,
    "layer_types": ["sliding_attention", "full_attention"] * 12,
}


@pytest.mark.parametrize(
    ("extra", "size", "groups"),
    [(0, 12, (FULL, SLIDING)), (1, 13, (FULL, SLIDING))],
    ids=["gpt-oss-20b", "gpt-oss-20b-eagle-pads-to-13"],
)
def test_gpt_oss_halves_the_tokens_of_an_all_full_estimate(
    extra: int, size: int, groups: tuple[GroupKind, ...]
) -> None:
    """vLLM's comment: gpt-oss-20b + eagle, 12 sw + 13 full, is padded to (13 sw, 13 full)."""
    facts = parse_model_config(json.dumps(GPT_OSS))
    assert facts.attention.kind is AttentionKind.SLIDING_WINDOW
    layout = kv_layout(facts, extra_layers=extra)
    assert layout is not None and (layout.layers_per_group, layout.groups) == (size, groups)
    page = 16 * 2 * 8 * 64 * 2
    assert layout.tokens(10 * GIB) == 10 * GIB // page // size // 2 * 16
    # a request of 131,072 tokens: the whole context in the full group, the window plus a
    # prefill chunk (8,192) in the sliding one
    assert layout.request_blocks(131_072) == 131_072 // 16 + (128 - 1 + 8192) // 16 + 1 + 1


# A Mamba2 hybrid in Nemotron-H's terms (built from vLLM's mamba2_state_shape, no corpus
# log): 4 attention layers among 24 Mamba layers and 4 MLP-only ones that cache nothing.
NEMOTRON_H = {
    "model_type": "nemotron_h",
    "num_hidden_layers": 32,
    "hybrid_override_pattern": "M-MMMMM*" * 4,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "hidden_size": 4096,
    "mamba_num_heads": 128,
    "mamba_head_dim": 64,
    "ssm_state_size": 128,
    "n_groups": 8,
    "conv_kernel": 4,
}


@pytest.mark.parametrize(("tp", "block"), [(1, 528), (2, 528)], ids=["tp1", "tp2"])
def test_a_mamba2_hybrid_sizes_its_block_to_the_state(tp: int, block: int) -> None:
    facts = parse_model_config(json.dumps(NEMOTRON_H))
    attention = facts.attention
    assert attention.kind is AttentionKind.HYBRID_MAMBA and attention.state is not None
    assert (len(attention.full_attention_layers), len(attention.state_layers)) == (4, 24)
    # conv: 3 x (8,192 + 2 x 8 x 128) / tp at 2 bytes; recurrent: 128 / tp heads x 64 x 128
    expected = (3 * (8192 + 2 * 8 * 128) * 2 + 128 * 64 * 128 * 2) // tp
    assert attention.state.page_bytes(tp) == expected
    layout = kv_layout(facts, tensor_parallel_size=tp)
    assert layout is not None
    # 4 full + 24 state layers: groups of 4, one full and six state groups
    assert (layout.layers_per_group, len(layout.groups)) == (4, 7)
    assert layout.block_size == block == 16 * -(-expected // (16 * 2 * (8 // tp) * 128 * 2))


# vLLM PR #29303 (merged for 0.12): gpt-oss-120b with an EAGLE3 head, 19 full + 18 sliding
# layers, logged "Add 17 padding layers" before it and "Add 1 padding layers" after.
@pytest.mark.parametrize(
    ("near_most", "size", "groups", "padded"),
    [(False, 18, (FULL, FULL, SLIDING), 17), (True, 19, (FULL, SLIDING), 1)],
    ids=["before-0.12-fewest", "0.12-on-most-under-1.5x"],
)
def test_the_grouping_rule_of_each_vllm_release(
    near_most: bool, size: int, groups: tuple[GroupKind, ...], padded: int
) -> None:
    counts = {FULL: 19, SLIDING: 18}
    assert group_layers(counts, near_most) == (size, groups)
    assert sum(-n % size for n in counts.values()) == padded


def test_a_seat_on_an_older_image_is_laid_out_by_its_releases_rule() -> None:
    """gpt-oss-20b with an EAGLE3 head (13 full + 12 sliding): two groups of 13 from 0.12,
    three of 12 before."""
    from fleet.plan.seat_layout import seat_layout
    from fleet.spec.models import Seat

    facts = parse_model_config(json.dumps(GPT_OSS))
    seat = {"name": "s", "host": "h", "gpus": [0], "model": "/m", "served_name": "s"}
    seat |= {"context": 8192, "port": 8000, "image": "vllm/vllm-openai:v0.18.0"}
    seat |= {"speculative": {"method": "eagle3", "num_tokens": 3, "draft_model": "/d"}}
    new = Seat.model_validate(seat)
    old = new.model_copy(update={"image": "vllm/vllm-openai:v0.11.2"})
    layouts = [seat_layout(s, facts, None) for s in (new, old)]
    assert [(x.layers_per_group, len(x.groups)) for x in layouts if x] == [(13, 2), (12, 3)]


def test_a_16_bit_recurrent_state_halves_the_hybrid_block() -> None:
    """`--mamba-ssm-cache-dtype bfloat16`: Qwen3.5-9B's state is 1,097,728 B, so 272 tokens."""
    from fleet.plan.seat_layout import with_state_dtype

    facts = parse_model_config((CORPUS / "model-configs" / QWEN35_CONFIG).read_text())
    layout = kv_layout(with_state_dtype(facts, "bfloat16"))
    assert layout is not None and layout.block_size == 272


GEMMA3 = "gemma-3-27b-it_sliding-window_nested-text_config.config.json"


@pytest.mark.parametrize(
    ("image", "device_mib", "in_flight", "notes"),
    [
        (
            "vllm/vllm-openai:v0.32.0",
            24 * 1024,
            2 * 2048,
            (
                "2 prefill chunks in flight (async scheduling)",
                "prefill chunk 2048 (24 GiB GPU)",
            ),
        ),
        (
            "vllm/vllm-openai:v0.32.0",
            96 * 1024,
            2 * 8192,
            (
                "2 prefill chunks in flight (async scheduling)",
                "prefill chunk 8192 (96 GiB GPU)",
            ),
        ),
        ("vllm/vllm-openai:v0.18.0", 24 * 1024, 8192, ()),
    ],
    ids=["0.32-24GiB", "0.32-96GiB", "0.18-as-the-corpus-holds"],
)
def test_a_gpu_seat_holds_the_prefill_chunks_its_release_and_gpu_give(
    image: str, device_mib: int, in_flight: int, notes: tuple[str, ...]
) -> None:
    """Gemma 3 27B's sliding groups hold a window (1,024) beside what is in flight: from 0.32
    two batches (async scheduling) of a chunk the GPU's memory decides."""
    from fleet.plan.seat_layout import seat_layout
    from fleet.spec.models import Seat

    facts = parse_model_config((CORPUS / "model-configs" / GEMMA3).read_text())
    seat = {"name": "s", "host": "h", "gpus": [0], "model": "/m", "served_name": "s"}
    seat |= {"context": 32768, "port": 8000, "image": image}
    layout = seat_layout(Seat.model_validate(seat), facts, None, device_mib)
    assert layout is not None and layout.assumptions == notes
    sliding = -(-(1024 - 1 + in_flight) // 16) + 1
    assert layout.request_blocks(32768) == 32768 // 16 + 6 * sliding
