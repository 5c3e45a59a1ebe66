"""What of a vLLM argv, release and platform changes the KV layout plan predicts.

The flags: `--kv-cache-dtype`, `--pipeline-parallel-size` (`-pp`), the prefill chunk
`--max-num-batched-tokens` (a sliding-window group holds it beside its window),
`--mamba-ssm-cache-dtype` (a Mamba state's dtype), `--block-size`,
`--[no-]enable-prefix-caching`, `--mamba-cache-mode` and `--[no-]async-scheduling`, as
`fleet.engines.kv.KvSettings` for the engine-neutral model. An explicit flag wins over
any default below.

The defaults by release (`version`; None: not known, the rules the corpus holds, but on
the CPU build, whose release images follow 0.32's) and platform (`cpu`, `cuda`, `rocm`;
None: a GPU), each read in vLLM's source:

- Before 0.12 a kind's groups always had the fewest layers of a kind; PR #29303 groups by
  the most when under 1.5x the fewest.
- The logged cache size is `int(max_concurrency x max_model_len)` since 0.24
  (`get_kv_cache_capacity`), whole blocks per group before (0.19's
  `_report_kv_cache_config`).
- From 0.32 (the release read; 0.20-0.31 keep the rules the corpus holds for 0.19):
  - the CPU build (`platforms/cpu.py`, `CpuPlatform.check_and_update_config`): blocks of
    128 tokens unless `--block-size`; an MLA model on a CPU without AMX (or with
    `--attention-backend CPU_MLA`) runs the reference CPU_MLA backend
    (`get_attn_backend_cls`), whose decode kernel compiles for blocks of 16 only: 16
    whatever `--block-size` says, and prefix caching and chunked prefill off
    (`CPU_MLA_BLOCK`; with AMX, AMX_MLA keeps the rules above; the host's AMX is
    `fleet.facts.cpuinfo`), a hybrid's attention block a multiple of max(32, block)
    (`_align_hybrid_block_size`, the CPU attention backend's kernel blocks are multiples
    of 32), no async scheduling (one batch in flight), the SSM state in float32 (reset on
    AVX512-BF16 machines, which the CPU build targets); the prefill chunk 2048 per
    tensor-parallel rank (`EngineArgs._get_default_max_num_batched_tokens`, the OpenAI
    server);
  - GPUs: the prefill chunk by the seat's first GPU (`GPU_BATCHED_TOKENS`: its memory
    and name; 8192 where its memory is not known); `--performance-mode throughput`
    doubles the default chunk, on the CPU too; async scheduling on unless
    `--no-async-scheduling` or pipeline parallelism
    (`VllmConfig.__post_init__`), so two prefill chunks in flight
    (`VllmConfig.max_in_flight_tokens`); a speculative method other than EAGLE, a draft
    model, DFlash or DSpark turns it off (`fleet.plan.seat_layout` says which);
  - a Mamba hybrid caches its state in mode `align` when prefix caching is on, the
    default (`MambaModelConfig.verify_and_update_config`): 2 blocks per request, plus a
    prefill checkpoint block for Mamba2 (`MambaSpec.max_memory_usage_bytes`,
    `MambaMixer2.get_kv_cache_spec`).

Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

from fleet.engines.kv import KvSettings, read_kv_settings
from fleet.facts.argv import flag_value

NEAR_MOST_SINCE = (0, 12, 0)  # the first vLLM release grouping by the most layers (1.5x)
TOKENS_FROM_CONCURRENCY_SINCE = (0, 24, 0)  # logged size = max concurrency x context
PLATFORM_RULES_SINCE = (0, 32, 0)  # the release whose platform defaults were read
CPU_BLOCK = 128
CPU_KERNEL_BLOCK = 32
CPU_BATCHED_TOKENS = 2048  # per tensor-parallel rank, the OpenAI server's default
CPU_MLA_BLOCK = 16  # the reference CPU_MLA backend's only block (csrc/cpu/mla_decode.cpp)
ATTENTION_BACKEND = "--attention-backend"
ASYNC_OFF = ("--no-async-scheduling",)
# The OpenAI server's (`vllm serve`, UsageContext.OPENAI_API_SERVER) prefill chunk on a GPU
# of at least so much memory (MiB), unless its name holds the third item, 0.32:
# `EngineArgs.get_batch_defaults` reads the first visible device's memory
# (`get_device_total_memory`: NVML's total, what nvidia-smi's memory.total says) and
# name: >= 160 GiB 16384; >= 70 GiB 8192 but not on an A100 (PR #17885: a large chunk
# cost an A100 throughput); any other GPU 2048. The CPU build: 2048 per tensor-parallel
# rank (`CPU_BATCHED_TOKENS`).
GPU_BATCHED_TOKENS = ((160 * 1024, 16384, ""), (70 * 1024, 8192, "a100"), (0, 2048, ""))
# `--performance-mode throughput` doubles a default chunk (`_set_default_max_num_seqs_and_
# batched_tokens_args`, 0.32).
THROUGHPUT = ("--performance-mode", "throughput")
# Speculative methods that keep async scheduling on (`VllmConfig.__post_init__`, 0.32):
# EAGLE's kinds and MTP, a draft model, DFlash, DSpark and the GPU n-gram.
ASYNC_DRAFTERS = ("eagle", "eagle3", "mtp", "draft_model", "dflash", "dspark", "ngram_gpu")


def kv_settings(
    args: Sequence[str], version: tuple[int, ...] | None, platform: str | None = None
) -> KvSettings:
    """The KV dtype, pipeline size, prefill chunk, state dtype, block sizes and cache rules
    of a vLLM argv on a release (None: not known) and platform (None: a GPU)."""
    settings = read_kv_settings(
        args,
        dtype=("--kv-cache-dtype",),
        pipeline=("--pipeline-parallel-size", "-pp"),
        batched=("--max-num-batched-tokens",),
        state_dtype=("--mamba-ssm-cache-dtype",),
        block=("--block-size",),
        prefix_caching=(("--enable-prefix-caching",), ("--no-enable-prefix-caching",)),
        state_cache=("--mamba-cache-mode",),
    )
    if version is None and platform == "cpu":
        version = PLATFORM_RULES_SINCE  # vLLM's CPU release images are of 0.32's rules
    update: dict[str, object] = {
        "fewest_groups": version is not None and version < NEAR_MOST_SINCE,
        "tokens_from_concurrency": version is not None and version >= TOKENS_FROM_CONCURRENCY_SINCE,
        "platform": platform,
    }
    if version is not None and version >= PLATFORM_RULES_SINCE:
        rules = _cpu(settings, args) if platform == "cpu" else _gpu(settings, args)
        update |= rules
    return settings.model_copy(update=update)


def _cpu(settings: KvSettings, args: Sequence[str]) -> dict[str, object]:
    """The CPU build's defaults, where no flag set them, and what they moved."""
    notes: list[tuple[str, str]] = []
    rules: dict[str, object] = {"kernel_block": CPU_KERNEL_BLOCK, "in_flight_batches": 1}
    rules["cpu_mla_block"] = CPU_MLA_BLOCK
    rules["cpu_mla_forced"] = (flag_value(args, ATTENTION_BACKEND) or "").upper() == "CPU_MLA"
    if settings.block_size is None:
        rules["block_size"] = CPU_BLOCK
        notes.append(("all", f"block {CPU_BLOCK} (CPU)"))
    if settings.batched_tokens is None:
        chunk = CPU_BATCHED_TOKENS * _tensor_parallel(args) * _throughput(args)
        rules["batched_tokens"] = chunk
        notes.append(("sliding", f"prefill chunk {chunk}"))
    if settings.state_dtype in (None, "", "auto"):
        rules["state_dtype"] = "float32"
        notes.append(("state", "SSM state float32 (CPU)"))
    rules |= _state_cache(settings, notes)
    return rules | {"assumptions": tuple(notes)}


def _gpu(settings: KvSettings, args: Sequence[str]) -> dict[str, object]:
    """A GPU's defaults of the release read, where no flag set them."""
    notes: list[tuple[str, str]] = []
    rules: dict[str, object] = {}
    if settings.pipeline_parallel == 1 and not any(a in ASYNC_OFF for a in args):
        rules |= {"in_flight_batches": 2, "async_drafters": ASYNC_DRAFTERS}
    if settings.batched_tokens is None:
        twice = _throughput(args)
        rules["batched_by_device"] = tuple((m, c * twice, n) for m, c, n in GPU_BATCHED_TOKENS)
        notes.append(("sliding", "2 prefill chunks in flight (async scheduling)"))
    rules |= _state_cache(settings, notes)
    return rules | {"assumptions": tuple(notes)}


def _state_cache(settings: KvSettings, notes: list[tuple[str, str]]) -> dict[str, object]:
    """The Mamba cache mode: the flag's, else `align` with prefix caching (the default)."""
    if settings.state_cache:
        return {}
    if settings.prefix_caching is False:
        return {"state_cache": "none"}
    notes.append(("state", "Mamba cache align (prefix caching)"))
    return {"state_cache": "align"}


def _throughput(args: Sequence[str]) -> int:
    """2 where `--performance-mode throughput` doubles the default prefill chunk, else 1."""
    return 2 if flag_value(args, THROUGHPUT[0]) == THROUGHPUT[1] else 1


def _tensor_parallel(args: Sequence[str]) -> int:
    value = flag_value(args, "--tensor-parallel-size", "-tp")
    return int(value) if value and value.isdigit() and int(value) > 0 else 1
