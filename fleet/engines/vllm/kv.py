"""What of a vLLM argv and release changes the KV layout plan predicts.

`--kv-cache-dtype`, `--pipeline-parallel-size` (`-pp`), the prefill chunk
`--max-num-batched-tokens` (a sliding-window group holds it beside its window) and
`--mamba-ssm-cache-dtype` (a Mamba state's dtype), as `fleet.engines.kv.KvSettings` for the
engine-neutral model. Before 0.12 a kind's groups always had the fewest layers of a kind;
vLLM PR #29303 groups by the most when under 1.5x the fewest. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

from fleet.engines.kv import KvSettings, read_kv_settings

NEAR_MOST_SINCE = (0, 12, 0)  # the first vLLM release grouping by the most layers (1.5x)


def kv_settings(args: Sequence[str], version: tuple[int, ...] | None) -> KvSettings:
    """The KV dtype, pipeline size, prefill chunk and state dtype of a vLLM argv, and the
    grouping rule of its release (None: a current one)."""
    settings = read_kv_settings(
        args,
        dtype=("--kv-cache-dtype",),
        pipeline=("--pipeline-parallel-size", "-pp"),
        batched=("--max-num-batched-tokens",),
        state_dtype=("--mamba-ssm-cache-dtype",),
    )
    fewest = version is not None and version < NEAR_MOST_SINCE
    return settings.model_copy(update={"fewest_groups": fewest})
