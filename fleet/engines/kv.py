"""What of an engine's argv and release changes the KV layout plan predicts, as plain values.

The KV model (`fleet.facts.kv_estimate.kv_layout`) is engine-neutral: it takes a KV dtype,
a pipeline-parallel size, a prefill chunk, a recurrent state's dtype, a grouping rule and
the rules of the engine's release and platform (block sizes, batches in flight, how many
blocks a state holds, how the logged cache size is counted). Each engine's `kv_settings`
reads them off its own flags (`read_kv_settings` does the reading given the flag names),
its release and the platform it runs on, an explicit flag winning over a default, and
names the defaults that moved the figures (`assumptions`); `fleet.plan` and `fleet
explain log --model` hand them to the model. Pure.
"""

from collections.abc import Sequence

from fleet.base import CoreModel
from fleet.facts.argv import flag_value


class KvSettings(CoreModel):
    """The settings that change a KV layout, engine-neutral.

    `dtype` is the KV cache's element type (`auto`: the model's 16 bits); `batched_tokens`
    the prefill chunk a sliding-window group holds beside its window (None: the model's
    default); `state_dtype` the dtype of a linear-attention or Mamba state when the engine
    was told one; `fewest_groups` groups layers by the fewest of a kind (older releases).
    `batched_by_device` the default prefill chunk by the device, where it depends on it:
    (at least so many MiB, chunk, a device name that rules the row out or "") from the
    largest; the first row the device's memory reaches and its name does not rule out.
    `block_size` is the attention block (None: 16), `kernel_block` what a hybrid's
    attention block is a multiple of (None: the block size); `in_flight_batches` how many
    prefill chunks a sliding window holds at once, and `async_drafters` the speculative
    methods that keep them (any other one leaves one batch in flight); `prefix_caching`
    whether the flags turned it on or off (None: not said); `state_cache` the Mamba cache
    mode (`none`, or `align`: two blocks per state and request, and a prefill checkpoint
    for Mamba2);
    `tokens_from_concurrency` whether the logged cache size is the maximum concurrency
    times the context; `platform` `cuda`, `rocm` or `cpu` when known; `cpu_mla_block` the
    block an MLA model gets on a CPU without AMX, whatever the flags say (None: the
    engine has no such rule), and `cpu_mla_forced` whether the flags chose that backend on
    any CPU; `assumptions` the
    defaults that moved the layout, each as (the groups it concerns: `all`, `sliding`
    or `state`; how a plan line names it: `block 128 (CPU)`).
    """

    dtype: str = "auto"
    pipeline_parallel: int = 1
    batched_tokens: int | None = None
    state_dtype: str | None = None
    fewest_groups: bool = False
    block_size: int | None = None
    kernel_block: int | None = None
    in_flight_batches: int = 1
    batched_by_device: tuple[tuple[int, int, str], ...] = ()
    async_drafters: tuple[str, ...] = ()
    prefix_caching: bool | None = None
    state_cache: str | None = None
    tokens_from_concurrency: bool = False
    platform: str | None = None
    cpu_mla_block: int | None = None
    cpu_mla_forced: bool = False
    assumptions: tuple[tuple[str, str], ...] = ()


def read_kv_settings(
    args: Sequence[str],
    *,
    dtype: tuple[str, ...] = (),
    pipeline: tuple[str, ...] = (),
    batched: tuple[str, ...] = (),
    state_dtype: tuple[str, ...] = (),
    block: tuple[str, ...] = (),
    prefix_caching: tuple[tuple[str, ...], tuple[str, ...]] = ((), ()),
    state_cache: tuple[str, ...] = (),
) -> KvSettings:
    """The settings an argv gives through the named flags (the last one of a name wins);
    a pipeline size that is not a positive number is 1, a chunk not a number is not given.
    `prefix_caching` names the flags that turn it on and those that turn it off."""
    chunk = flag_value(args, *batched) if batched else None
    return KvSettings(
        dtype=((flag_value(args, *dtype) if dtype else None) or "auto").strip().lower(),
        pipeline_parallel=_positive(flag_value(args, *pipeline) if pipeline else None) or 1,
        batched_tokens=int(chunk) if chunk and chunk.isdigit() else None,
        state_dtype=flag_value(args, *state_dtype) if state_dtype else None,
        block_size=_positive(flag_value(args, *block) if block else None),
        prefix_caching=_switch(args, *prefix_caching),
        state_cache=(flag_value(args, *state_cache) or None) if state_cache else None,
    )


def _switch(args: Sequence[str], on: tuple[str, ...], off: tuple[str, ...]) -> bool | None:
    """True or False by the last of the named flags the argv gives; None if it gives none."""
    found = None
    for arg in args:
        name = arg.partition("=")[0]
        found = True if name in on else False if name in off else found
    return found


def _positive(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() and int(value) > 0 else None
