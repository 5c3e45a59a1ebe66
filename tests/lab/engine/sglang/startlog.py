"""SGLang's start-up log lines, as 0.5.23 formats them (tests/corpus/sglang-logs/SOURCES.md).

`[YYYY-MM-DD HH:MM:SS] message` from the launcher and the HTTP server,
`[YYYY-MM-DD HH:MM:SS TP<n>] message` from a scheduler.
"""

from __future__ import annotations

import sys
import time
from typing import Any

GiB = 1024**3


def line(message: str, rank: int | None = None) -> None:
    """One log line on stderr (SGLang logs through `logging`, to stderr)."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime())
    prefix = f" TP{rank}" if rank is not None else ""
    sys.stderr.write(f"[{stamp}{prefix}] {message}\n")
    sys.stderr.flush()


def raw(message: str) -> None:
    """A line without the header (a traceback's)."""
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def server_args(settings: dict[str, Any]) -> str:
    """`server_args={...}` (engine.py: the resolved settings as a dict)."""
    return f"server_args={settings!r}"


def weights_end(architecture: str, avail: float, usage: float) -> str:
    """model_runner.py: `Load weight end. elapsed=..., type=..., avail mem=..., mem usage=...`."""
    return (
        f"Load weight end. elapsed=0.30 s, type={architecture}, "
        f"avail mem={avail / GiB:.2f} GB, mem usage={usage / GiB:.2f} GB."
    )


def kv_allocated(dtype: str, tokens: int, k_bytes: int, v_bytes: int) -> str:
    """memory_pool.py: `KV Cache is allocated. dtype: ..., #tokens: ..., K size: ...`."""
    return (
        f"KV Cache is allocated. dtype: torch.{dtype}, #tokens: {tokens}, "
        f"K size: {k_bytes / GiB:.2f} GB, V size: {v_bytes / GiB:.2f} GB"
    )


def capacity(tokens: int, running: int, context: int, avail: float) -> str:
    """scheduler.py: `max_total_num_tokens=..., ..., context_len=..., available_gpu_mem=...`."""
    return (
        f"max_total_num_tokens={tokens}, chunked_prefill_size=8192, "
        f"max_prefill_tokens=16384, max_running_requests={running}, "
        f"context_len={context}, available_gpu_mem={avail / GiB:.2f} GB"
    )


def context_too_long(asked: int, derived: int) -> str:
    """model_config.py's refusal of a context above the model's."""
    return (
        f"ValueError: Warning: User-specified context_length ({asked}) is greater than the "
        f"derived context_length ({derived}). This may lead to incorrect model outputs or "
        "CUDA errors. Note that the derived context_length may differ from "
        "max_position_embeddings in the model's config. To allow overriding this maximum, "
        "set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"
    )


NOT_ENOUGH_MEMORY = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."
READY = "The server is fired up and ready to roll!"
