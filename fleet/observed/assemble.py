"""Turn the fact script's output for one host into an `ObservedHost`.

Pure: called by `reconciler.workflows.observe` with the text one SSH round trip printed and the
host's runtime (`fleet.runtimes`), which reads its seat instances out of it. GPU processes
are mapped to instances through /proc/<pid>/cgroup, as the runtime reads it (nvidia-smi
reports the engine's child process, never the container's main pid), instances become
seats by their `fleet.seat` label, and each seat gets its GPUs and VRAM and its log facts,
read by the engine its process runs (never guessed from the image or the program name).
"""

from __future__ import annotations

from typing import Any

from fleet.engines import engine_load, read_process
from fleet.engines.report import EngineReport
from fleet.facts.gpu_facts import GPU_PROCESSES, GPUS, GpuProcesses, GpuReading
from fleet.facts.host_facts import (
    CPU,
    JOURNAL,
    LOCK,
    MEMORY,
    MISSING,
    MODELS,
    GgufFile,
    ModelDir,
    ModelFiles,
)
from fleet.facts.instance import Instance
from fleet.facts.kv_estimate import estimate_kv_bytes_per_token
from fleet.facts.model_files import DISK, FILES, PARTIALS, SOURCES, ModelFile
from fleet.facts.script import FactOutput
from fleet.facts.seat_metrics import SEAT_METRICS
from fleet.names import COMPOSE_SERVICE_LABEL, MANAGED_LABEL, SEAT_LABEL, is_seat_name
from fleet.observed.exit_reason import exit_reason, out_of_memory
from fleet.observed.models import GpuProcessUse, ModelInfo, ObservedGpu, ObservedHost, ObservedSeat
from fleet.runtimes import Runtime


def assemble_host(name: str, output: str, runtime: Runtime, boundary: str = "") -> ObservedHost:
    """The observed host, from everything its fact script printed; `runtime` is the one
    the host runs its seats under, `boundary` the run's section boundary. Each fact reads
    its own sections (`FactOutput`)."""
    facts = FactOutput(output, boundary)
    if not facts.finished:
        return ObservedHost(
            name=name, reachable=False, error="fact script did not finish (output cut short)"
        )
    reading = facts[GPUS]
    gpus = _gpus(reading)
    processes = _processes(reading, facts[GPU_PROCESSES], gpus, runtime)
    reported = runtime.read_seats(facts)
    seats = tuple(
        _with_definition(_seat(c, reported.logs.get(c.id, ""), processes), reported.definitions)
        for c in reported.instances
    )
    memory, journal = facts[MEMORY], facts[JOURNAL]
    return ObservedHost(
        name=name,
        lock=facts[LOCK],
        interrupted=tuple(_step(step) for step in journal.unfinished),
        applied_commit=journal.applied[0] if journal.applied else None,
        applied_at=journal.applied[1] if journal.applied else None,
        gateway_restart_seconds=journal.gateway_restart_seconds,
        seat_start_seconds=journal.seat_start_seconds,
        gpus=gpus,
        gpu_error=reading.error,
        runtime=runtime.NAME,
        runtime_error=reported.error,
        processes=processes,
        seats=seats,
        models=_models(facts[MODELS], facts[FILES]),
        missing_paths=facts[MISSING],
        disk=facts[DISK],
        sources=facts[SOURCES],
        partials=facts[PARTIALS],
        memory_total_mib=memory.total_mib,
        memory_available_mib=memory.available_mib,
        loads={port: engine_load(text) for port, text in facts[SEAT_METRICS].items()},
        cpu_amx=facts[CPU].amx,
    )


def _with_definition(seat: ObservedSeat, written: dict[str, dict[str, Any]]) -> ObservedSeat:
    """A managed seat with its definition as fleet wrote it on the host (if it did): by its
    instance (a systemd unit), else by its compose service (`<seat>-b` after a surge)."""
    if not seat.managed:
        return seat
    service = seat.instance.labels.get(COMPOSE_SERVICE_LABEL) or seat.name
    definition = written.get(seat.instance.id) or written.get(service) or written.get(seat.name)
    return seat.model_copy(update={"definition": definition}) if definition else seat


def _step(entry: dict[str, str]) -> str:
    target = f" {entry['target']}" if entry.get("target") else ""
    return f"{entry.get('at', '?')} {entry.get('step', '?')}{target}"


def _gpus(reading: GpuReading) -> tuple[ObservedGpu, ...]:
    gpus = tuple(
        ObservedGpu(
            index=g.index,
            uuid=g.uuid or "",
            name=g.name or "",
            memory_total_mib=g.memory_total_mib or 0,
            memory_used_mib=g.memory_used_mib or 0,
            missing=g.missing,
        )
        for g in reading.gpus
        if g.index is not None
    )
    return tuple(sorted(gpus, key=lambda g: g.index))


def _processes(
    reading: GpuReading, found: GpuProcesses, gpus: tuple[ObservedGpu, ...], runtime: Runtime
) -> tuple[GpuProcessUse, ...]:
    by_uuid = {g.uuid: g.index for g in gpus}
    uses = [
        GpuProcessUse(
            pid=p.pid,
            gpu_index=by_uuid.get(p.gpu_uuid or "", p.gpu_index),
            used_mib=p.used_memory_mib or 0,
            container_id=runtime.owner(found.cgroups.get(p.pid, "")),
        )
        for p in found.listed or reading.table_processes
    ]
    return tuple(sorted(uses, key=lambda u: (u.gpu_index or 0, u.pid)))


def _seat(container: Instance, log: str, processes: tuple[GpuProcessUse, ...]) -> ObservedSeat:
    mine = [p for p in processes if p.container_id == container.id]
    _, engine = read_process(container.argv)
    seat = observed_seat(
        container,
        engine=engine.read_log(log) if log and engine else None,
        gpus=tuple(sorted({p.gpu_index for p in mine if p.gpu_index is not None})),
        vram_mib=sum(p.used_mib for p in mine),
    )
    if container.running:
        return seat
    signatures = engine.OOM_SIGNATURES if engine else ()
    stops: tuple[str, ...] = getattr(engine, "STOP_SIGNATURES", ())
    return seat.model_copy(
        update={
            "exit_reason": exit_reason(container),
            "out_of_memory": out_of_memory(container, log, signatures, stops),
        }
    )


def observed_seat(
    container: Instance, *, engine: EngineReport | None, gpus: tuple[int, ...], vram_mib: int
) -> ObservedSeat:
    """A seat from its container (labels, live argv, read by the engine the process runs)
    and what the GPUs and log say."""
    labels = container.labels
    seat_label = labels.get(SEAT_LABEL)
    managed = (
        labels.get(MANAGED_LABEL) == "true" and seat_label is not None and is_seat_name(seat_label)
    )
    args, kind = read_process(container.argv)
    shape = kind.observed_shape(args) if kind else {}
    speculative = args.speculative_config or shape.get("speculative")
    logged = engine.speculative if engine else None
    if logged is not None and logged.method and not speculative:  # llama.cpp's own MTP head
        speculative = {"method": logged.method}
    return ObservedSeat(
        name=seat_label if managed and seat_label else container.name,
        managed=managed,
        instance=container,
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


def _models(found: ModelFiles, files: dict[str, dict[str, ModelFile]]) -> dict[str, ModelInfo]:
    models = {path: _dir_model(path, entry) for path, entry in found.dirs.items()}
    models.update({path: _gguf_model(path, entry) for path, entry in found.ggufs.items()})
    recorded = {p: e.recorded for p, e in found.dirs.items()}
    recorded.update({p: e.recorded for p, e in found.ggufs.items()})
    return {
        path: info.model_copy(update={"files": files.get(path), "recorded": recorded[path]})
        for path, info in models.items()
    }


def _dir_model(path: str, entry: ModelDir) -> ModelInfo:
    """A model directory's facts: its size, its config.json's, the lineage beside it."""
    facts = entry.config
    return ModelInfo(
        path=path,
        size_bytes=entry.size_bytes,
        architecture=facts.architectures[0] if facts and facts.architectures else None,
        model_type=facts.model_type if facts else None,
        num_layers=facts.num_layers if facts else None,
        num_experts=facts.num_experts if facts else None,
        num_experts_per_token=facts.num_experts_per_token if facts else None,
        attention=facts.attention.kind.value if facts and facts.attention.kind else None,
        quantization=facts.quantization.scheme if facts else None,
        max_position_embeddings=facts.max_position_embeddings if facts else None,
        kv_bytes_per_token=estimate_kv_bytes_per_token(facts) if facts else None,
        lineage=entry.lineage,
        config_error=None if facts is not None else "no config.json",
        facts=facts,
    )


def _gguf_model(path: str, entry: GgufFile) -> ModelInfo:
    """A GGUF file's facts: its size, its header's and the lineage file beside it."""
    facts = entry.header
    return ModelInfo(
        path=path,
        size_bytes=entry.size_bytes,
        architecture=facts.architecture,
        model_type=facts.architecture,
        num_layers=facts.block_count,
        num_experts=facts.expert_count,
        quantization=facts.file_type,
        max_position_embeddings=facts.context_length,
        kv_bytes_per_token=facts.kv_bytes_per_token,
        kv_fixed_bytes=facts.kv_fixed_bytes,
        gguf=facts,
        lineage=entry.lineage,
        config_error=None if facts.architecture else "no GGUF header read",
    )
