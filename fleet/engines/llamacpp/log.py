"""Facts from a llama.cpp `llama-server` log: context, slots, KV buffer, model, offload.

Called by the reconciler on the log of a llama-server seat (journal, container log) and
by `fleet explain log`. Reads the classic format (`llama_context: n_ctx = 6912`,
`llama_kv_cache: CUDA0 KV buffer size = 135.00 MiB`) and the timestamped `-lv` format of
newer builds (`0.22.632.867 I srv load_model: initializing, n_slots = 1, ...`), which
prints fewer facts. The KV cache's total and K/V types come from `llama_kv_cache: size =
...` (mid-2025 on) or, in older builds, `KV self size  = 256.00 MiB, K (f16): ...` (logged
by `llama_new_context_with_model`, `llama_init_from_model`, `llama_context` or
`llama_kv_cache_unified`; before that without the types, as `kv self size  = 256.00 MB`).
KV buffers logged after `loading draft model`, after `creating MTP draft context against
the target model` (2026 builds), or after the target's KV size line (the context of the
model's own MTP head, `set_mtp: MTP draft head registered`), belong to the drafter:
`draft_kv_buffer_mib`, never added into the target's. A model with interleaved
sliding-window attention has two caches of its own (`llama_kv_cache_iswa: creating
non-SWA KV cache`, then `creating     SWA KV cache`, each with its buffers and size
line): both are the seat's KV. The MTP lines (`creating MTP draft context ...`,
`adding speculative implementation 'mtp'` or `'draft-mtp'`) give `mtp` as the method.
The build is `build: N (commit)`, in newer builds `build_info: bN-commit`, and in 2026
builds (b11434) a trace line (`-lv 4` only) `common_params_print_info: build N (commit)
with <compiler>`; each is read as `N (commit)`. The KV cache's cells are the target's
`llama_kv_cache: size = ... (C cells, L layers, S/N seqs)` (mid-2025 on): C cells in each
of N streams (one per slot, one when the cache is unified), so C x N in all. With a draft
model, 2026 builds trace the speculative implementation (`adding speculative
implementation 'draft-simple'`) and its `- n_max=K, n_min=..., p_min=...` (`-lv 4`):
`speculative_type` and `draft_max`; when they log `no implementations specified for
speculative decoding` instead (a draft model without `--spec-type`), the drafter is
loaded but never drafts: no speculative method.
"""

from __future__ import annotations

import re

from fleet.base import CoreModel
from fleet.facts._text import clean_lines, record_first, to_float, to_int

_BUILD = re.compile(r"^build: (\d+ \(\w+\))")
_BUILD_INFO = re.compile(r"\bbuild_info: b?(\d+)-(\w+)")
_BUILD_TRACE = re.compile(r"\bbuild (\d+) \((\w+)\) with ")
_KV_CELLS = re.compile(
    r"llama_kv_cache\w*: size\s*=\s*[\d.]+ MiB \(\s*(\d+) cells,\s*\d+ layers,"
    r"\s*\d+(?:/(\d+))? seqs"
)
_SPEC_TYPE = re.compile(r"adding speculative implementation '([\w-]+)'")
_SPEC_N_MAX = re.compile(r"- n_max=(\d+), n_min=")
_NO_SPEC = "no implementations specified for speculative decoding"
_MTP = re.compile(
    r"MTP draft head registered|--spec-type \S*mtp|spec_type = \S*mtp"
    r"|creating MTP draft context|speculative implementation '(?:draft-)?mtp'"
)
_MTP_CONTEXT = "creating MTP draft context"
_ISWA_SWA = re.compile(r"llama_kv_cache_iswa: creating\s+SWA KV cache")
_MODEL = re.compile(r"load_model: loading model '([^']*)'")
_DRAFT = re.compile(r"loading draft model '([^']*)'")
_ARCH = re.compile(r"print_info: arch\s*=\s*(\S+)")
_CTX_TRAIN = re.compile(r"print_info: n_ctx_train\s*=\s*(\d+)")
_N_CTX = re.compile(r"llama_context: n_ctx\s*=\s*(\d+)")
_SLOT_CTX = re.compile(r"n_ctx_slot = (\d+)|new slot,? n_ctx(?:_slot)? = (\d+)")
_SLOTS = re.compile(r"n_slots = (\d+)|using n_parallel = (\d+)")
_UNIFIED = re.compile(r"kv_unified\s*=\s*'?(true|false)'?")
_KV_BUFFER = re.compile(r"\b(\w+): +(\S+)\s+(?:paged\s+)?KV buffer size\s*=\s*([\d.]+) MiB")
# `%s: KV self size  = %7.2f MiB, K (%s): %7.2f MiB, V (%s): %7.2f MiB` (until mid-2025)
_KV_SIZE = re.compile(
    r"(llama_kv_cache\w*): size\s*=\s*([\d.]+) MiB.{0,160}?K \((\w+)\):.{0,80}?V \((\w+)\)"
    r"|\b(\w+): [Kk][Vv] self size\s*=\s*([\d.]+) Mi?B(?:, K \((\w+)\):.{0,80}?V \((\w+)\))?"
)
# Late 2023 CUDA builds: the part of the KV cache offloaded to the GPU.
_VRAM_KV = re.compile(r"VRAM kv self = [\d.]+ Mi?B")
_RECURRENT = re.compile(r"llama_memory_recurrent: size =\s*([\d.]+) MiB")
_FILE_SIZE = re.compile(r"(?:file|model) size\s*=\s*([\d.]+) (GiB|MiB)")
_MODEL_BUFFER = re.compile(r"load_tensors:\s+(\S+) model buffer size\s*=\s*([\d.]+) MiB")
_OFFLOADED = re.compile(r"offloaded (\d+)/(\d+) layers to GPU")
_LISTENING = re.compile(r"listening on (\S+)")
_ERROR = re.compile(
    r"error loading model|failed to load model|failed to allocate|out of memory"
    r"|failed to create MTP context",  # b11434 asked for MTP on a model without MTP blocks
    re.IGNORECASE,
)


class DeviceBuffer(CoreModel):
    """A buffer llama.cpp allocated on one device (`CUDA0`, `CPU_Mapped`, `Vulkan0`)."""

    device: str
    mib: float


class LlamaCppReport(CoreModel):
    """What a llama-server log says; a fact the log does not state is None.

    `ctx_size` is the whole context (`n_ctx`), `ctx_per_slot` what one slot may use;
    `kv_cells` is the target's KV cache in cells over all its streams (tokens it holds);
    `kv_buffer_mib` sums the target model's KV buffers over devices (else the KV size the
    log states); `draft_kv_buffer_mib` the drafter's (a draft model's or the MTP head's
    context); `speculative_method` is `draft` (a draft model) or `mtp` (the model's own).
    `kv_on_cpu` is True when every KV buffer is on a CPU (host) device (`CPU`, `CUDA_Host`:
    `--no-kv-offload`, or no GPU), False when one is on a GPU (or a 2023 build says `VRAM
    kv self`), None when the log places no KV buffer.
    """

    build: str | None = None
    model_path: str | None = None
    arch: str | None = None
    n_ctx_train: int | None = None
    ctx_size: int | None = None
    ctx_per_slot: int | None = None
    parallel_slots: int | None = None
    kv_unified: bool | None = None
    kv_cells: int | None = None
    kv_buffer_mib: float | None = None
    kv_type_k: str | None = None
    kv_type_v: str | None = None
    kv_on_cpu: bool | None = None
    recurrent_state_mib: float | None = None
    model_size_gib: float | None = None
    model_buffers: tuple[DeviceBuffer, ...] = ()
    offloaded_layers: int | None = None
    total_layers: int | None = None
    draft_model: str | None = None
    draft_kv_buffer_mib: float | None = None
    speculative_method: str | None = None
    speculative_type: str | None = None
    draft_max: int | None = None
    listen_url: str | None = None
    errors: tuple[str, ...] = ()

    def to_explain_json(self) -> dict[str, object]:
        """The JSON `fleet explain log --json` prints for a llama-server log."""
        return self.model_dump(mode="json")


def parse_llamacpp_log(text: str) -> LlamaCppReport:
    """Read a llama-server log; odd or empty input gives empty facts."""
    found: dict[str, str] = {}
    kv_buffers: list[DeviceBuffer] = []
    model_buffers: list[DeviceBuffer] = []
    errors: list[str] = []
    draft_buffers: list[DeviceBuffer] = []
    for line in clean_lines(text):
        if "draft_model" not in found and (match := _DRAFT.search(line)):
            found["draft_model"] = match.group(1)
        if _MTP.search(line):
            found["mtp"] = "true"
        if _MTP_CONTEXT in line:
            found["mtp_context"] = "true"
        if _NO_SPEC in line:
            found["no_spec"] = "true"
        if _ISWA_SWA.search(line) and "kv_size_mib" in found:
            found["swa_cache"] = "pending"
        _collect(line, found)
        drafting = "draft_model" in found or "mtp_context" in found
        if not drafting and ("kv_size_mib" not in found or found.get("swa_cache") == "pending"):
            _collect_sizes(line, found, kv_buffers, model_buffers)
        elif not drafting:
            _collect_sizes(line, found, draft_buffers, model_buffers)
        else:
            _collect_sizes(line, {}, draft_buffers, [])
        if _ERROR.search(line) and line.strip() not in errors:
            errors.append(line.strip())
    report = _assemble(found, kv_buffers, model_buffers, tuple(errors))
    draft_mib = round(sum(b.mib for b in draft_buffers), 2) if draft_buffers else None
    method = "draft" if "draft_model" in found else "mtp" if "mtp" in found else None
    if "no_spec" in found:
        method = None  # a draft model loaded, but no method named: it never drafts
    return report.model_copy(
        update={"draft_kv_buffer_mib": draft_mib, "speculative_method": method}
    )


def _collect(line: str, found: dict[str, str]) -> None:
    """Record the facts one line states; the first value wins (the target's, not the draft's)."""
    simple = (
        ("build", _BUILD),
        ("model_path", _MODEL),
        ("arch", _ARCH),
        ("n_ctx_train", _CTX_TRAIN),
        ("ctx_size", _N_CTX),
        ("kv_unified", _UNIFIED),
        ("recurrent_state_mib", _RECURRENT),
        ("listen_url", _LISTENING),
        ("ctx_per_slot", _SLOT_CTX),  # either alternative's group
        ("parallel_slots", _SLOTS),
        ("speculative_type", _SPEC_TYPE),
        ("draft_max", _SPEC_N_MAX),
    )
    record_first(line, simple, found)
    if "build" not in found and (match := _BUILD_INFO.search(line) or _BUILD_TRACE.search(line)):
        found["build"] = f"{match.group(1)} ({match.group(2)})"


def _collect_sizes(
    line: str,
    found: dict[str, str],
    kv_buffers: list[DeviceBuffer],
    model_buffers: list[DeviceBuffer],
) -> None:
    """Record the target model's buffer sizes, file size and offload count."""
    if match := _KV_BUFFER.search(line):
        function, device, size = match.groups()
        if "recurrent" not in function:
            kv_buffers.append(DeviceBuffer(device=device, mib=to_float(size) or 0.0))
    elif match := _KV_SIZE.search(line):
        _collect_kv_size(match, found)
    elif _VRAM_KV.search(line):
        found["kv_in_vram"] = "true"
    if (match := _MODEL_BUFFER.search(line)) and (mib := to_float(match.group(2))) is not None:
        model_buffers.append(DeviceBuffer(device=match.group(1), mib=mib))
    if "model_size" not in found and (match := _FILE_SIZE.search(line)):
        found["model_size"], found["model_size_unit"] = match.groups()
    if "offloaded" not in found and (match := _OFFLOADED.search(line)):
        found["offloaded"], found["total_layers"] = match.groups()


def _collect_kv_size(match: re.Match[str], found: dict[str, str]) -> None:
    """The first KV size line's total and K/V types (a recurrent cache's is its state)."""
    groups = match.groups()
    function, size, type_k, type_v = groups[0:4] if groups[0] else groups[4:8]
    if "recurrent" in (function or ""):
        found.setdefault("recurrent_state_mib", size or "")
    elif found.get("swa_cache") == "pending" and size:
        found["swa_cache"], found["swa_size_mib"] = "read", size
    elif "kv_size_mib" not in found and size:
        found["kv_size_mib"] = size
        if cells := _KV_CELLS.search(match.string):
            streams = int(cells.group(2) or 1)
            found["kv_cells"] = str(int(cells.group(1)) * streams)
        if type_k and type_v:
            found["kv_type_k"], found["kv_type_v"] = type_k, type_v


def _assemble(
    found: dict[str, str],
    kv_buffers: list[DeviceBuffer],
    model_buffers: list[DeviceBuffer],
    errors: tuple[str, ...],
) -> LlamaCppReport:
    """Turn the recorded strings into the report."""
    kv_mib = (
        round(sum(buffer.mib for buffer in kv_buffers), 2)
        if kv_buffers
        else _sum_mib(found.get("kv_size_mib"), found.get("swa_size_mib"))
    )
    unified = found.get("kv_unified")
    return LlamaCppReport(
        build=found.get("build"),
        model_path=found.get("model_path"),
        arch=found.get("arch"),
        n_ctx_train=to_int(found.get("n_ctx_train")),
        ctx_size=to_int(found.get("ctx_size")),
        ctx_per_slot=to_int(found.get("ctx_per_slot")),
        parallel_slots=to_int(found.get("parallel_slots")),
        kv_unified=None if unified is None else unified == "true",
        kv_cells=to_int(found.get("kv_cells")),
        kv_buffer_mib=kv_mib,
        kv_type_k=found.get("kv_type_k"),
        kv_type_v=found.get("kv_type_v"),
        kv_on_cpu=_kv_on_cpu(kv_buffers, found),
        recurrent_state_mib=to_float(found.get("recurrent_state_mib")),
        model_size_gib=_gib(found.get("model_size"), found.get("model_size_unit")),
        model_buffers=tuple(model_buffers),
        offloaded_layers=to_int(found.get("offloaded")),
        total_layers=to_int(found.get("total_layers")),
        draft_model=found.get("draft_model"),
        speculative_type=found.get("speculative_type"),
        draft_max=to_int(found.get("draft_max")),
        listen_url=found.get("listen_url"),
        errors=errors,
    )


def _sum_mib(*sizes: str | None) -> float | None:
    """The sizes given, added (None when the first is not given)."""
    numbers = [to_float(size) for size in sizes if size is not None]
    if not numbers or numbers[0] is None:
        return None
    return round(sum(n for n in numbers if n is not None), 2)


def _kv_on_cpu(kv_buffers: list[DeviceBuffer], found: dict[str, str]) -> bool | None:
    """Whether every KV buffer is in host memory; None when the log places none."""
    if kv_buffers:
        return all(_on_host(buffer.device) for buffer in kv_buffers)
    return False if "kv_in_vram" in found else None


def _on_host(device: str) -> bool:
    """A CPU buffer (`CPU`, `CPU_Mapped`) or a GPU backend's host one (`CUDA_Host`)."""
    return device.upper().startswith("CPU") or device.endswith("_Host")


def _gib(value: str | None, unit: str | None) -> float | None:
    """A size printed in GiB or MiB, as GiB."""
    number = to_float(value)
    if number is None:
        return None
    return number if unit == "GiB" else round(number / 1024, 4)
