"""The llama-server contract: the facts fleet reads off a startup log equal what the same
running server reports through its own API.

`mismatches(log, answers, argv)` is pure: it reads the log with fleet's own parser
(`fleet.engines.llamacpp.log`) and compares, fact by fact,

- build: `build: N (commit)` / `build_info: bN-commit` against `/props` `build_info`;
- context per slot: `n_ctx_slot` against `/props` `default_generation_settings.n_ctx`
  and each `/slots` entry's `n_ctx`;
- slots: `n_slots` against `/props` `total_slots` and the length of `/slots`;
- KV cells: `llama_kv_cache: size = ... (C cells, ...)` and `llama_context: n_ctx`
  against slots x context per slot (one context when the cache is unified);
- KV types: `K (t): ..., V (t): ...` against the `-ctk` / `-ctv` the process was given
  (f16 when none: the API states no cache type);
- speculative: `loading draft model`, the speculative implementation and its `n_max`
  against every `/slots` entry's `speculative`, the `llamacpp:spec_decode_*` counters
  of `/metrics` (while it drafts) and the flags given (`/props`' `speculative.types` is
  the default request's, `none` also while the server drafts).

A fact the log does not state is a mismatch too (the contract is that fleet can read
it). The stand-in (tests/unit/lab_engine/test_llamacpp_contract.py) and the real
llama-server (tests/integration/test_real_llamacpp.py) are held to the same function.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from fleet.engines.llamacpp import METRICS
from fleet.engines.llamacpp.argv import FLAGS
from fleet.engines.llamacpp.log import LlamaCppReport, parse_llamacpp_log
from fleet.facts.engine_metrics import sum_samples

_BUILD_INFO = re.compile(r"^b?(\d+)-(\w+)$")
_BUILD = re.compile(r"^(\d+) \((\w+)\)$")
SPEC_COUNTERS = (METRICS.spec_accepted, METRICS.spec_draft_tokens, METRICS.spec_drafts)


@dataclass(frozen=True)
class Answers:
    """What the running server answered: `/props`, `/slots` and `/metrics`."""

    props: dict[str, Any]
    slots: list[dict[str, Any]]
    metrics: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def given(argv: Sequence[str], *names: str) -> str | None:
    """The value of the last of `names` on the command line (`--flag v` or `--flag=v`)."""
    value = None
    for i, token in enumerate(argv):
        flag, _, inline = token.partition("=")
        if flag in names:
            value = inline or (argv[i + 1] if i + 1 < len(argv) else None)
    return value


def _flags_for(field_name: str) -> tuple[str, ...]:
    """Every spelling fleet reads for one argv field (`draft_model`: -md, ...)."""
    return tuple(flag for flag, (name, _reader) in FLAGS.items() if name == field_name)


UNSTATED = ": the log states none"


def _compare(out: list[str], fact: str, logged: object, reported: object) -> None:
    if logged is None:
        out.append(f"{fact}{UNSTATED} (the engine reports {reported!r})")
    elif logged != reported:
        out.append(f"{fact}: the log says {logged!r}, the engine {reported!r}")


def _build(report: LlamaCppReport, answers: Answers) -> list[str]:
    out: list[str] = []
    info = _BUILD_INFO.match(str(answers.props.get("build_info", "")))
    logged = _BUILD.match(report.build or "")
    _compare(
        out,
        "build",
        logged.groups() if logged else None,
        info.groups() if info else answers.props.get("build_info"),
    )
    return out


def _context(report: LlamaCppReport, answers: Answers) -> list[str]:
    out: list[str] = []
    per_slot = answers.props.get("default_generation_settings", {}).get("n_ctx")
    _compare(out, "context per slot", report.ctx_per_slot, per_slot)
    slot_ctx = sorted({slot.get("n_ctx") for slot in answers.slots}, key=str)
    if slot_ctx != [per_slot]:
        out.append(f"context per slot: /slots says {slot_ctx}, /props {per_slot}")
    _compare(out, "slots", report.parallel_slots, answers.props.get("total_slots"))
    if len(answers.slots) != answers.props.get("total_slots"):
        total = answers.props.get("total_slots")
        out.append(f"slots: /slots lists {len(answers.slots)}, /props total_slots is {total}")
    return out


def _kv(report: LlamaCppReport, answers: Answers, argv: Sequence[str]) -> list[str]:
    out: list[str] = []
    per_slot = answers.props.get("default_generation_settings", {}).get("n_ctx")
    total = answers.props.get("total_slots")
    cells = None
    if isinstance(per_slot, int) and isinstance(total, int):
        cells = per_slot if report.kv_unified else per_slot * total
    _compare(out, "KV cells", report.kv_cells, cells)
    _compare(out, "KV context (n_ctx)", report.ctx_size, cells)
    type_k = given(argv, "-ctk", "--cache-type-k") or "f16"
    type_v = given(argv, "-ctv", "--cache-type-v") or "f16"
    _compare(out, "KV types", _types(report), (type_k, type_v))
    return out


def _types(report: LlamaCppReport) -> tuple[str, str] | None:
    if report.kv_type_k is None or report.kv_type_v is None:
        return None
    return (report.kv_type_k, report.kv_type_v)


def _speculative(report: LlamaCppReport, answers: Answers, argv: Sequence[str]) -> list[str]:
    out: list[str] = []
    draft = given(argv, *_flags_for("draft_model"))
    flags = answers.slots and all(slot.get("speculative") for slot in answers.slots)
    reported = "draft" if flags else None
    if report.speculative_method != reported:
        out.append(f"speculative: the log says {report.speculative_method!r}, /slots {reported!r}")
    if draft is not None:
        _compare(out, "draft model", report.draft_model, draft)
        n_max = given(argv, *_flags_for("draft_max"))
        if n_max is not None:
            _compare(out, "draft tokens (n_max)", report.draft_max, int(n_max))
    sums = sum_samples(answers.metrics) if answers.metrics else {}
    missing = [name for name in SPEC_COUNTERS if name is not None and name not in sums]
    if flags and answers.metrics and missing:
        out.append(f"speculative: /metrics lacks {', '.join(missing)}")
    return out


FACTS = (
    "build",
    "context per slot",
    "slots",
    "KV cells",
    "KV context (n_ctx)",
    "KV types",
    "speculative",
    "draft model",
    "draft tokens (n_max)",
)


def mismatches(
    log: str, answers: Answers, argv: Sequence[str] = (), unstated: Iterable[str] = ()
) -> list[str]:
    """Every fact where fleet's reading of the startup log and the engine disagree.

    A fact the log does not state is a mismatch unless it is one of `unstated` (what a
    build does not log at the verbosity it ran with: b11434 logs its build, KV cache and
    draft settings at `-lv 4` only)."""
    report = parse_llamacpp_log(log)
    skipped = tuple(f"{fact}{UNSTATED}" for fact in unstated)
    found = [
        *_build(report, answers),
        *_context(report, answers),
        *_kv(report, answers, argv),
        *_speculative(report, answers, argv),
    ]
    return [line for line in found if not line.startswith(skipped)]


def fetch(base_url: str, timeout: float = 10.0) -> Answers:
    """Ask a running llama-server (started with --metrics) for its side of the contract."""
    import json
    import urllib.request

    def get(path: str) -> bytes:
        with urllib.request.urlopen(base_url + path, timeout=timeout) as reply:
            return bytes(reply.read())

    return Answers(
        props=json.loads(get("/props")),
        slots=json.loads(get("/slots")),
        metrics=get("/metrics").decode(),
    )
