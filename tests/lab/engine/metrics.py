"""vLLM's Prometheus exposition: the gauges and counters the stand-in really measures.

Names as vLLM V1 registers them with prometheus_client (a Counter `vllm:x` is exposed
as `vllm:x_total`), labelled `model_name` and, since 0.10, `engine`. The speculative
counters exist only with --speculative-config (vllm/v1/spec_decode/metrics.py,
SpecDecodingProm), the per-position one labelled `position`. `vllm:cache_config_info`
is V1's info gauge (always 1) whose labels are the engine's CacheConfig as strings, as the
real 0.32.0 exports it: among them `num_gpu_blocks`, `block_size`, `kv_cache_size_tokens`
and `kv_cache_max_concurrency`, the figures the start-up log states.
"""

from __future__ import annotations

from typing import Any

from .logfmt import series
from .scheduler import Scheduler
from .specdecode import SpecDecode

Row = tuple[str, str, str, float]


def labels(version: str, model: str, extra: str = "") -> str:
    """`{engine="0",model_name="..."}` (0.9: no engine label)."""
    engine = "" if series(version) == "0.9" else 'engine="0",'
    return f'{{{engine}model_name="{model}"{extra}}}'


def scheduler_rows(version: str, sched: Scheduler) -> list[Row]:
    """Request gauges, KV usage and the token counters."""
    running, waiting = sched.gauges()
    usage = "gpu_cache_usage_perc" if series(version) == "0.9" else "kv_cache_usage_perc"
    return [
        (
            "num_requests_running",
            "gauge",
            "Number of requests in model execution batches.",
            running,
        ),
        ("num_requests_waiting", "gauge", "Number of requests waiting to be processed.", waiting),
        (usage, "gauge", "KV-cache usage. 1 means 100 percent usage.", sched.kv_usage()),
        (
            "prompt_tokens_total",
            "counter",
            "Number of prefill tokens processed.",
            sched.prompt_tokens,
        ),
        (
            "generation_tokens_total",
            "counter",
            "Number of generation tokens processed.",
            sched.generation_tokens,
        ),
        (
            "request_success_total",
            "counter",
            "Count of successfully processed requests.",
            sched.finished,
        ),
    ]


def spec_rows(spec: SpecDecode) -> list[Row]:
    """The engine-wide speculative-decoding counters."""
    drafts, drafted, accepted, _ = spec.snapshot()
    return [
        ("spec_decode_num_drafts_total", "counter", "Number of spec decoding drafts.", drafts),
        ("spec_decode_num_draft_tokens_total", "counter", "Number of draft tokens.", drafted),
        (
            "spec_decode_num_accepted_tokens_total",
            "counter",
            "Number of accepted tokens.",
            accepted,
        ),
    ]


def render(rows: list[Row], label: str) -> list[str]:
    """HELP, TYPE and sample lines of unlabelled-by-position rows."""
    out: list[str] = []
    for name, kind, doc, value in rows:
        out += [
            f"# HELP vllm:{name} {doc}",
            f"# TYPE vllm:{name} {kind}",
            f"vllm:{name}{label} {float(value)}",
        ]
    return out


def per_position(version: str, model: str, spec: SpecDecode) -> list[str]:
    """vllm:spec_decode_num_accepted_tokens_per_pos_total, one sample per draft position."""
    name = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
    out = [f"# HELP {name} Accepted tokens per draft position.", f"# TYPE {name} counter"]
    for position, count in enumerate(spec.snapshot()[3]):
        label = labels(version, model, f',position="{position}"')
        out.append(f"{name}{label} {float(count)}")
    return out


def cache_config_info(cfg: dict[str, Any]) -> list[str]:
    """vllm:cache_config_info: the cache's settings and sizes as labels (V1 only)."""
    if series(cfg["version"]) == "0.9":
        return []
    utilization = cfg.get("gpu_memory_utilization")
    fields = {
        "block_size": cfg.get("block_size"),
        "cache_dtype": cfg.get("kv_cache_dtype") or "auto",
        "enable_prefix_caching": True,
        "engine": 0,
        "gpu_memory_utilization": 0.9 if utilization is None else utilization,
        "kv_cache_max_concurrency": cfg.get("max_concurrency"),
        "kv_cache_memory_bytes": cfg.get("kv_cache_memory_bytes"),
        "kv_cache_size_tokens": cfg.get("kv_tokens"),
        "num_gpu_blocks": cfg.get("num_blocks"),
    }
    label = ",".join(f'{key}="{value}"' for key, value in fields.items())
    name = "vllm:cache_config_info"
    return [
        f"# HELP {name} Information of the LLMEngine CacheConfig",
        f"# TYPE {name} gauge",
        f"{name}{{{label}}} 1.0",
    ]


def metrics_text(cfg: dict[str, Any], model: str, sched: Scheduler, spec: SpecDecode | None) -> str:
    """The whole /metrics body."""
    version = cfg["version"]
    label = labels(version, model)
    lines = render(scheduler_rows(version, sched), label) + cache_config_info(cfg)
    if spec is not None:
        lines += render(spec_rows(spec), label) + per_position(version, model, spec)
    return "\n".join(lines) + "\n"
