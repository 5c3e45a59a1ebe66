"""The contract between what fleet reads off a vLLM start-up log and what vLLM's API says.

fleet's facts about a vLLM seat come from its log (`fleet.engines.vllm.log`): the version,
the served names, the context, the KV cache in tokens, the maximum concurrency and the
speculative config. The engine also reports each of them through its API: `/version`,
`/v1/models` (`id`, `max_model_len`), `/metrics` (`vllm:cache_config_info`'s
`kv_cache_size_tokens` and `kv_cache_max_concurrency` labels, and with speculative
decoding the `vllm:spec_decode_*` counters, one per-position sample per speculative
token). `mismatches` lists where the two disagree; it is pure, so the same function holds
the real engine (tests/integration/real_vllm_checks.py) and the lab's stand-in
(tests/unit/lab_engine/test_vllm_contract.py) to one contract.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from fleet.engines.vllm.log import parse_vllm_log

_INFO = re.compile(r"^vllm:cache_config_info\{(?P<labels>[^}]*)\}\s+\S+\s*$", re.M)
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
_POSITION = re.compile(
    r'^vllm:spec_decode_num_accepted_tokens_per_pos_total\{[^}]*position="(\d+)"', re.M
)
_SPEC_COUNTER = re.compile(r"^vllm:spec_decode_num_drafts_total\b", re.M)


@dataclass(frozen=True)
class ApiFacts:
    """What the engine reports through its API, read off its replies."""

    version: str | None
    max_model_len: dict[str, int]  # served name -> max_model_len
    kv_cache_tokens: int | None
    max_concurrency: float | None
    speculative_tokens: int | None  # per-position samples; None without spec counters


def cache_info(metrics: str) -> dict[str, str]:
    """The labels of `vllm:cache_config_info` (empty when it is not there)."""
    found = _INFO.search(metrics)
    return dict(_LABEL.findall(found.group("labels"))) if found else {}


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def api_facts(version: dict[str, Any], models: dict[str, Any], metrics: str) -> ApiFacts:
    """The facts of the `/version` and `/v1/models` JSON and the `/metrics` text."""
    info = cache_info(metrics)
    tokens = _number(info.get("kv_cache_size_tokens"))
    positions = {int(p) for p in _POSITION.findall(metrics)}
    spec = len(positions) if _SPEC_COUNTER.search(metrics) else None
    return ApiFacts(
        version=version.get("version"),
        max_model_len={m["id"]: m.get("max_model_len") for m in models.get("data", [])},
        kv_cache_tokens=int(tokens) if tokens is not None else None,
        max_concurrency=_number(info.get("kv_cache_max_concurrency")),
        speculative_tokens=spec,
    )


def mismatches(
    log: str, version: dict[str, Any], models: dict[str, Any], metrics: str
) -> list[str]:
    """Each fact the start-up log states that the API contradicts, as `fact: log X, api Y`.

    A fact the log does not state is a mismatch too: fleet would have nothing to read.
    """
    report = parse_vllm_log(log)
    api = api_facts(version, models, metrics)
    spec = report.speculative
    lengths = sorted(set(api.max_model_len.values()))
    pairs: list[tuple[str, object, object]] = [
        ("version", report.version, api.version),
        ("served_names", sorted(report.served_names), sorted(api.max_model_len)),
        ("max_model_len", report.max_model_len, lengths[0] if len(lengths) == 1 else lengths),
        ("kv_cache_tokens", report.kv_cache_tokens, api.kv_cache_tokens),
        (
            "max_concurrency",
            report.max_concurrency,
            round(api.max_concurrency, 2) if api.max_concurrency is not None else None,
        ),
        ("speculative_tokens", spec.num_tokens if spec else None, api.speculative_tokens),
    ]
    found = [
        f"{name}: log {ours!r}, api {theirs!r}" for name, ours, theirs in pairs if ours != theirs
    ]
    found += [f"{name}: the log states none" for name, ours, _ in pairs[:5] if ours is None]
    return found
