"""What a vLLM start-up log says of the KV layout's inputs: the platform it ran on, and the
flags (stated or reset by the engine) that change the layout, as a command line.

Called by `fleet.engines.vllm.log` while it reads a log; `fleet.plan.seat_layout.log_layout`
hands the flags to `kv_settings` as it would a seat's, so a log and a seat are laid out by
one reading. The sources: the `non-default args` dict (`max_num_batched_tokens`,
`block_size`, `enable_prefix_caching`, `mamba_cache_mode`, `mamba_ssm_cache_dtype`,
`async_scheduling`, `tensor_parallel_size`), the engine's own lines where it overrode a
setting (`Reset SSM cache type to float32 ...` on the CPU build, `Mamba cache mode is set
to 'align' ...`, `Async scheduling not supported with ... and will be disabled`), and for
the platform the engine config's `device_config` (ROCm builds say `cuda` there and name
ROCm in their lines). Pure.
"""

from __future__ import annotations

import re

_SSM_RESET = re.compile(r"Reset SSM cache type to (\w+)")
_MAMBA_MODE = re.compile(r"Mamba cache mode is set to '(\w+)'")
_ATTENTION_BLOCK = re.compile(r"Setting attention block size to (\d+) tokens")
_ASYNC_OFF = re.compile(r"[Aa]sync scheduling (?:not supported|will be disabled|is disabled)")
_ROCM = re.compile(r"\[rocm\.py:\d+\]|\bon ROCm\b")
_CPU = re.compile(r"\bCPU KV cache size\b|\bcpu blocks:")

# args key -> flag with a value
_VALUE_FLAGS = {
    "max_num_batched_tokens": "--max-num-batched-tokens",
    "block_size": "--block-size",
    "mamba_cache_mode": "--mamba-cache-mode",
    "mamba_ssm_cache_dtype": "--mamba-ssm-cache-dtype",
    "tensor_parallel_size": "--tensor-parallel-size",
}
# args key -> (flag when true, flag when false)
_SWITCHES = {
    "enable_prefix_caching": ("--enable-prefix-caching", "--no-enable-prefix-caching"),
    "async_scheduling": ("--async-scheduling", "--no-async-scheduling"),
}


def collect(message: str, found: dict[str, str]) -> None:
    """Record what one log line says of the layout's inputs (the first of each)."""
    for key, pattern in (
        ("ssm_reset", _SSM_RESET),
        ("mamba_mode", _MAMBA_MODE),
        ("attention_block", _ATTENTION_BLOCK),
    ):
        if key not in found and (match := pattern.search(message)):
            found[key] = match.group(1)
    if _ASYNC_OFF.search(message):
        found.setdefault("async_off", "true")
    if _ROCM.search(message):
        found.setdefault("rocm", "true")
    if _CPU.search(message):
        found.setdefault("cpu", "true")


def engine_args(args: dict[str, object], found: dict[str, str]) -> tuple[str, ...]:
    """The layout's flags: the args' own, then what the engine reset (which wins)."""
    flags: list[str] = []
    for key, flag in _VALUE_FLAGS.items():
        if args.get(key) is not None:
            flags += [flag, str(args[key])]
    for key, (on, off) in _SWITCHES.items():
        if isinstance(args.get(key), bool):
            flags.append(on if args[key] else off)
    if "ssm_reset" in found:
        flags += ["--mamba-ssm-cache-dtype", found["ssm_reset"]]
    if "mamba_mode" in found:
        flags += ["--mamba-cache-mode", found["mamba_mode"]]
    if "async_off" in found:
        flags.append("--no-async-scheduling")
    return tuple(flags)


def platform(config: dict[str, object], found: dict[str, str]) -> str | None:
    """`cpu`, `rocm` or `cuda` as the log says; None when it does not."""
    device = str(config.get("device_config") or "").lower()
    if device == "cpu" or "cpu" in found:
        return "cpu"
    if "rocm" in found:
        return "rocm"
    return device or None
