"""What of an engine's argv and release changes the KV layout plan predicts, as plain values.

The KV model (`fleet.facts.kv_estimate.kv_layout`) is engine-neutral: it takes a KV dtype,
a pipeline-parallel size, a prefill chunk, a recurrent state's dtype and a grouping rule.
Each engine's `kv_settings` reads them off its own flags (`read_kv_settings` does the
reading given the flag names) and its release; `fleet.plan` and `fleet explain log --model`
hand them to the model. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

from fleet.base import CoreModel
from fleet.facts.argv import flag_value


class KvSettings(CoreModel):
    """The settings that change a KV layout, engine-neutral.

    `dtype` is the KV cache's element type (`auto`: the model's 16 bits); `batched_tokens`
    the prefill chunk a sliding-window group holds beside its window (None: the model's
    default); `state_dtype` the dtype of a linear-attention or Mamba state when the engine
    was told one; `fewest_groups` groups layers by the fewest of a kind (older releases).
    """

    dtype: str = "auto"
    pipeline_parallel: int = 1
    batched_tokens: int | None = None
    state_dtype: str | None = None
    fewest_groups: bool = False


def read_kv_settings(
    args: Sequence[str],
    *,
    dtype: tuple[str, ...] = (),
    pipeline: tuple[str, ...] = (),
    batched: tuple[str, ...] = (),
    state_dtype: tuple[str, ...] = (),
) -> KvSettings:
    """The settings an argv gives through the named flags (the last one of a name wins);
    a pipeline size that is not a positive number is 1, a chunk not a number is not given."""
    chunk = flag_value(args, *batched) if batched else None
    return KvSettings(
        dtype=((flag_value(args, *dtype) if dtype else None) or "auto").strip().lower(),
        pipeline_parallel=_positive(flag_value(args, *pipeline) if pipeline else None) or 1,
        batched_tokens=int(chunk) if chunk and chunk.isdigit() else None,
        state_dtype=flag_value(args, *state_dtype) if state_dtype else None,
    )


def _positive(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() and int(value) > 0 else None
