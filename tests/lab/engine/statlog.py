"""vLLM's periodic stats lines, from the stand-in's own counters.

Every VLLM_LOG_STATS_INTERVAL seconds (default 10, as in vLLM) in which the engine did
something, the API server logs `Engine 000: Avg prompt throughput: ... tokens/s, Avg
generation throughput: ... tokens/s, Running: N reqs, Waiting: N reqs, GPU KV cache
usage: X%, Prefix cache hit rate: 0.0%` and, with speculative decoding, `SpecDecoding
metrics: Mean acceptance length: ..., Accepted throughput: ..., Drafted throughput: ...,
Accepted: N tokens, Drafted: N tokens, Per-position acceptance rate: ..., Avg Draft
acceptance rate: X%` over that interval (vllm/v1/spec_decode/metrics.py).
"""

from __future__ import annotations

import threading
import time

from .logfmt import Log
from .scheduler import Scheduler, env_float
from .specdecode import SpecDecode


def engine_line(sched: Scheduler, prompt: float, generated: float, seconds: float) -> str:
    """The `Engine 000:` line for one interval."""
    running, waiting = sched.gauges()
    return (
        f"Engine 000: Avg prompt throughput: {prompt / seconds:.1f} tokens/s, "
        f"Avg generation throughput: {generated / seconds:.1f} tokens/s, "
        f"Running: {running} reqs, Waiting: {waiting} reqs, "
        f"GPU KV cache usage: {100 * sched.kv_usage():.1f}%, Prefix cache hit rate: 0.0%"
    )


def spec_line(
    before: tuple[int, int, int, list[int]], now: tuple[int, int, int, list[int]], seconds: float
) -> str:
    """The `SpecDecoding metrics:` line for one interval ('' without drafts)."""
    drafts, drafted, accepted = (now[i] - before[i] for i in range(3))
    if not drafts:
        return ""
    per_pos = [n - b for n, b in zip(now[3], before[3], strict=True)]
    rates = ", ".join(f"{n / drafts:.3f}" for n in per_pos)
    return (
        f"SpecDecoding metrics: Mean acceptance length: {1 + accepted / drafts:.2f}, "
        f"Accepted throughput: {accepted / seconds:.2f} tokens/s, "
        f"Drafted throughput: {drafted / seconds:.2f} tokens/s, "
        f"Accepted: {accepted} tokens, Drafted: {drafted} tokens, "
        f"Per-position acceptance rate: {rates}, "
        f"Avg Draft acceptance rate: {100 * accepted / max(drafted, 1):.1f}%"
    )


def start_stat_logger(log: Log, sched: Scheduler, spec: SpecDecode | None) -> None:
    """Log the stats lines in the background while the engine is busy."""
    interval = env_float("VLLM_LOG_STATS_INTERVAL", 10.0)

    def loop() -> None:
        last = (sched.prompt_tokens, sched.generation_tokens)
        last_spec = spec.snapshot() if spec else None
        while True:
            time.sleep(interval)
            now = (sched.prompt_tokens, sched.generation_tokens)
            busy = now != last or any(sched.gauges())
            if busy:
                log.info("stats", engine_line(sched, now[0] - last[0], now[1] - last[1], interval))
            if spec is not None and last_spec is not None:
                current = spec.snapshot()
                if line := spec_line(last_spec, current, interval):
                    log.info("spec", line)
                last_spec = current
            last = now

    if interval > 0:
        threading.Thread(target=loop, daemon=True).start()
