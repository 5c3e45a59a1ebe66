"""Turn the fact script's output for one host into an `ObservedHost`.

Pure: called by `reconciler.observe` with the text one SSH round trip printed and the
host's runtime (`fleet.runtimes`), which reads its seat instances out of it. GPU processes
are mapped to instances through /proc/<pid>/cgroup, as the runtime reads it (nvidia-smi
reports the engine's child process, never the container's main pid), instances become
seats by their `fleet.seat` label, and each seat gets its GPUs and VRAM and its log facts,
read by the engine its process runs (never guessed from the image or the program name).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from fleet.engines import read_process
from fleet.engines.report import EngineReport
from fleet.facts.docker_inspect import ContainerFact
from fleet.facts.gguf import parse_gguf_base64
from fleet.facts.journal import last_applied, unfinished
from fleet.facts.kv_estimate import estimate_kv_bytes_per_token
from fleet.facts.meminfo import parse_meminfo
from fleet.facts.model_config import parse_model_config
from fleet.facts.nvidia_smi import parse_compute_apps, parse_gpu_query, parse_nvidia_smi_table
from fleet.facts.provenance import parse_provenance
from fleet.facts.script import Section, split_sections
from fleet.names import MANAGED_LABEL, SEAT_LABEL
from fleet.observed.models import GpuProcessUse, ModelInfo, ObservedGpu, ObservedHost, ObservedSeat
from fleet.runtimes import Runtime
from fleet.runtimes.compose import COMPOSE

Sections = dict[str, dict[str, str]]


def assemble_host(name: str, output: str, runtime: Runtime = COMPOSE) -> ObservedHost:
    """The observed host, from everything its fact script printed; `runtime` is the one
    the host runs its seats under."""
    sections: Sections = defaultdict(dict)
    for kind, arg, body in split_sections(output):
        sections[kind][arg] = body
    if Section.END not in sections:
        return ObservedHost(
            name=name, reachable=False, error="fact script did not finish (output cut short)"
        )
    gpus, gpu_error = _gpus(sections)
    processes = _processes(sections, gpus, runtime)
    reported = runtime.read_seats(sections)
    seats = tuple(
        _with_definition(_seat(c, reported.logs.get(c.id, ""), processes), reported.definitions)
        for c in reported.instances
    )
    memory = parse_meminfo(sections[Section.MEMINFO].get("", ""))
    steps = unfinished(sections[Section.JOURNAL].get(""))
    applied = last_applied(sections[Section.JOURNAL].get(""))
    return ObservedHost(
        name=name,
        lock=sections[Section.LOCK].get("", "").strip() or None,
        interrupted=tuple(_step(step) for step in steps),
        applied_commit=applied[0] if applied else None,
        applied_at=applied[1] if applied else None,
        gpus=gpus,
        gpu_error=gpu_error,
        docker_error=reported.error,
        processes=processes,
        seats=seats,
        models=_models(sections),
        missing_paths=tuple(sorted(sections[Section.MISSING])),
        memory_total_mib=memory.total_mib,
        memory_available_mib=memory.available_mib,
    )


def _with_definition(seat: ObservedSeat, written: dict[str, dict[str, Any]]) -> ObservedSeat:
    """A managed seat with its service as the host's compose file defines it (if it does)."""
    definition = written.get(seat.name) if seat.managed else None
    return seat.model_copy(update={"definition": definition}) if definition else seat


def _step(entry: dict[str, str]) -> str:
    target = f" {entry['target']}" if entry.get("target") else ""
    return f"{entry.get('at', '?')} {entry.get('step', '?')}{target}"


def _gpus(sections: Sections) -> tuple[tuple[ObservedGpu, ...], str | None]:
    text = sections[Section.GPUS].get("", "")
    found = parse_gpu_query(text)
    if "0" not in sections[Section.GPUS_RC]:
        found = parse_nvidia_smi_table(sections[Section.GPU_TABLE].get("", "")).gpus
        if not found:
            lines = [line for line in text.splitlines() if line.strip()]
            return (), (lines[0] if lines else "nvidia-smi failed")
    gpus = tuple(
        ObservedGpu(
            index=g.index,
            uuid=g.uuid or "",
            name=g.name or "",
            memory_total_mib=g.memory_total_mib or 0,
            memory_used_mib=g.memory_used_mib or 0,
        )
        for g in found
        if g.index is not None
    )
    return tuple(sorted(gpus, key=lambda g: g.index)), None


def _processes(
    sections: Sections, gpus: tuple[ObservedGpu, ...], runtime: Runtime
) -> tuple[GpuProcessUse, ...]:
    by_uuid = {g.uuid: g.index for g in gpus}
    listed = parse_compute_apps(sections[Section.APPS].get("", "")) or (
        parse_nvidia_smi_table(sections[Section.GPU_TABLE].get("", "")).processes
    )
    uses = [
        GpuProcessUse(
            pid=p.pid,
            gpu_index=by_uuid.get(p.gpu_uuid or "", p.gpu_index),
            used_mib=p.used_memory_mib or 0,
            container_id=runtime.owner(sections[Section.CGROUP].get(str(p.pid), "")),
        )
        for p in listed
    ]
    return tuple(sorted(uses, key=lambda u: (u.gpu_index or 0, u.pid)))


def _seat(container: ContainerFact, log: str, processes: tuple[GpuProcessUse, ...]) -> ObservedSeat:
    mine = [p for p in processes if p.container_id == container.id]
    _, engine = read_process(container.argv)
    return observed_seat(
        container,
        engine=engine.read_log(log) if log and engine else None,
        gpus=tuple(sorted({p.gpu_index for p in mine if p.gpu_index is not None})),
        vram_mib=sum(p.used_mib for p in mine),
    )


def observed_seat(
    container: ContainerFact, *, engine: EngineReport | None, gpus: tuple[int, ...], vram_mib: int
) -> ObservedSeat:
    """A seat from its container (labels, live argv, read by the engine the process runs)
    and what the GPUs and log say."""
    labels = container.labels
    managed = labels.get(MANAGED_LABEL) == "true" and SEAT_LABEL in labels
    args, kind = read_process(container.argv)
    shape = kind.observed_shape(args) if kind else {}
    speculative = args.speculative_config or shape.get("speculative")
    return ObservedSeat(
        name=labels.get(SEAT_LABEL, container.name) if managed else container.name,
        managed=managed,
        container=container,
        engine_name=kind.NAME if kind else None,
        served_names=args.served_model_names or ((args.model,) if args.model else ()),
        model=args.model,
        port=args.port,
        max_model_len=shape.get("context"),
        kv_cache_bytes=args.kv_cache_memory_bytes,
        gpu_memory_utilization=args.gpu_memory_utilization,
        tensor_parallel_size=args.tensor_parallel_size,
        parallel_slots=shape.get("parallel"),
        speculative=dict(speculative) if speculative else None,
        extra_args=tuple(args.extra),
        gpus=gpus,
        vram_mib=vram_mib,
        engine=engine,
    )


def _models(sections: Sections) -> dict[str, ModelInfo]:
    models: dict[str, ModelInfo] = {}
    for path, size in sorted(sections[Section.MODEL].items()):
        config = sections[Section.CONFIG].get(path)
        facts = parse_model_config(config) if config is not None else None
        provenance = sections[Section.PROVENANCE].get(path)
        lineage = parse_provenance(provenance).as_dict() if provenance else {}
        models[path] = ModelInfo(
            path=path,
            size_bytes=int(size) if size.strip().isdigit() else None,
            architecture=facts.architectures[0] if facts and facts.architectures else None,
            model_type=facts.model_type if facts else None,
            num_layers=facts.num_layers if facts else None,
            num_experts=facts.num_experts if facts else None,
            num_experts_per_token=facts.num_experts_per_token if facts else None,
            attention=facts.attention.kind.value if facts and facts.attention.kind else None,
            quantization=facts.quantization.scheme if facts else None,
            max_position_embeddings=facts.max_position_embeddings if facts else None,
            kv_bytes_per_token=estimate_kv_bytes_per_token(facts) if facts else None,
            lineage=lineage,
            config_error=None if config is not None else "no config.json",
            facts=facts,
        )
    for path, body in sorted(sections[Section.GGUF].items()):
        models[path] = _gguf_model(path, body, sections[Section.PROVENANCE].get(path))
    return models


def _gguf_model(path: str, body: str, provenance: str | None) -> ModelInfo:
    """A GGUF file's facts: its size (first line), its header (the base64 rest) and the
    lineage file beside it."""
    size, _, head = body.partition("\n")
    facts = parse_gguf_base64(head)
    return ModelInfo(
        path=path,
        size_bytes=int(size) if size.strip().isdigit() else None,
        architecture=facts.architecture,
        model_type=facts.architecture,
        num_layers=facts.block_count,
        num_experts=facts.expert_count,
        quantization=facts.file_type,
        max_position_embeddings=facts.context_length,
        kv_bytes_per_token=facts.kv_bytes_per_token,
        lineage=parse_provenance(provenance).as_dict() if provenance else {},
        config_error=None if facts.architecture else "no GGUF header read",
    )
