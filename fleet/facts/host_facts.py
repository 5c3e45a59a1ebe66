"""The host-wide facts of the fact script: memory, the CPU's AMX, the models on disk, the
paths desired/ names that are missing, and the apply lock and journal.

Each is a `Fact` (command, sections, parser, default in one place; `fleet.facts.script`)
read by `fleet.observed.assemble`; their parsers are the modules named below. A model
directory gives its size (`du -sb`), its config.json and the lineage file beside it
(`<path>.PROVENANCE.txt`); a GGUF file its size and the first 64 KiB (its keys come first;
its tensors are never read), base64 on one line.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from pydantic import Field

from fleet.base import CoreModel
from fleet.facts.cpuinfo import CpuFacts, parse_cpu_flags
from fleet.facts.gguf import GgufFacts, parse_gguf_base64
from fleet.facts.journal import last_applied, last_gateway_restart, last_seat_starts, unfinished
from fleet.facts.meminfo import MemoryFacts, parse_meminfo
from fleet.facts.model_config import ModelFacts, parse_model_config
from fleet.facts.model_files import DISK, FILES, PARTIALS, SOURCES
from fleet.facts.provenance import RecordedFile, parse_provenance, recorded_files
from fleet.facts.script import Fact, Parts, body
from fleet.names import PROVENANCE_SUFFIX, journal_path, lock_path

GGUF_HEAD_BYTES = 65536


class ModelDir(CoreModel):
    """A model directory: its size, its config.json's facts (None: no config.json)."""

    size_bytes: int | None = None
    config: ModelFacts | None = None
    lineage: dict[str, str] = Field(default_factory=dict)
    recorded: dict[str, RecordedFile] | None = None  # the files fleet fetched


class GgufFile(CoreModel):
    """A GGUF file: its size and its header's facts."""

    size_bytes: int | None = None
    header: GgufFacts
    lineage: dict[str, str] = Field(default_factory=dict)
    recorded: dict[str, RecordedFile] | None = None


class ModelFiles(CoreModel):
    """Every model directory and GGUF file read, by path."""

    dirs: dict[str, ModelDir] = Field(default_factory=dict)
    ggufs: dict[str, GgufFile] = Field(default_factory=dict)


class JournalFacts(CoreModel):
    """The steps of an apply that never finished, the last one that did, and how long the
    last in-place gateway restart and each seat's last start took."""

    unfinished: tuple[dict[str, str], ...] = ()
    applied: tuple[str, str] | None = None
    gateway_restart_seconds: float | None = None
    seat_start_seconds: dict[str, float] = Field(default_factory=dict)


def _words(paths: list[str]) -> str:
    return " ".join(shlex.quote(p) for p in paths)


MEMORY: Fact[MemoryFacts] = Fact(
    name="meminfo",
    command=lambda: "mark meminfo; head -n 3 /proc/meminfo 2>/dev/null\n",
    sections=("meminfo",),
    process=lambda parts: parse_meminfo(body(parts, "meminfo")),
    default=MemoryFacts(),
)
CPU: Fact[CpuFacts] = Fact(
    name="cpuinfo",
    command=lambda: (
        "mark cpuinfo; { while IFS= read -r fleet_cpu; do case $fleet_cpu in flags*) "
        'printf "%s\\n" "$fleet_cpu"; break;; esac; done < /proc/cpuinfo; } 2>/dev/null\n'
    ),
    sections=("cpuinfo",),
    process=lambda parts: parse_cpu_flags(body(parts, "cpuinfo")),
    default=CpuFacts(),
)


def _models_command(root: str, outside: list[str]) -> str:
    """Every entry under the models root and each path desired/ names outside it."""
    lineage = (
        f'  [ -f "$1{PROVENANCE_SUFFIX}" ] && '
        f'{{ mark provenance "$1"; cat "$1{PROVENANCE_SUFFIX}"; }}\n'
    )
    return (
        'model() {\n  mark model "$1"; du -sb "$1" 2>/dev/null | cut -f1\n'
        '  [ -f "$1/config.json" ] && { mark config "$1"; cat "$1/config.json"; }\n'
        + lineage
        + "}\n"
        + 'gguf() {\n  mark gguf "$1"; stat -c %s "$1" 2>/dev/null\n'
        f'  head -c {GGUF_HEAD_BYTES} "$1" | base64 | tr -d "\\n"; echo\n'
        + lineage
        + "}\n"
        + f"for dir in {shlex.quote(root or '/')}/* {_words(outside)}; do "
        'if [ -d "$dir" ]; then model "$dir"; '
        'else case "$dir" in *.gguf) [ -f "$dir" ] && gguf "$dir";; esac; fi; done\n'
    )


def _size(text: str) -> int | None:
    return int(text) if text.strip().isdigit() else None


def _lineage(parts: Parts, path: str) -> dict[str, str]:
    text = parts["provenance"].get(path)
    return parse_provenance(text).as_dict() if text else {}


def _recorded(parts: Parts, path: str) -> dict[str, RecordedFile] | None:
    text = parts["provenance"].get(path)
    return recorded_files(parse_provenance(text)) if text else None


def _read_models(parts: Parts) -> ModelFiles:
    dirs = {
        path: ModelDir(
            size_bytes=_size(size),
            config=parse_model_config(text)
            if (text := parts["config"].get(path)) is not None
            else None,
            lineage=_lineage(parts, path),
            recorded=_recorded(parts, path),
        )
        for path, size in sorted(parts["model"].items())
    }
    ggufs = {}
    for path, text in sorted(parts["gguf"].items()):
        size, _, head = text.partition("\n")
        ggufs[path] = GgufFile(
            size_bytes=_size(size),
            header=parse_gguf_base64(head),
            lineage=_lineage(parts, path),
            recorded=_recorded(parts, path),
        )
    return ModelFiles(dirs=dirs, ggufs=ggufs)


MODELS: Fact[ModelFiles] = Fact(
    name="models",
    command=_models_command,
    sections=("model", "config", "provenance", "gguf"),
    process=_read_models,
    default=ModelFiles(),
)

MISSING: Fact[tuple[str, ...]] = Fact(
    name="missing",
    command=lambda wanted: (
        f'for dir in {_words(wanted)}; do [ -e "$dir" ] || mark missing "$dir"; done\n'
    ),
    sections=("missing",),
    process=lambda parts: tuple(sorted(parts["missing"])),
    default=(),
)

LOCK: Fact[str | None] = Fact(
    name="lock",
    command=lambda state_dir: (
        f"[ -f {(p := shlex.quote(lock_path(state_dir)))} ] && {{ mark lock; cat {p}; }}\n"
    ),
    sections=("lock",),
    process=lambda parts: body(parts, "lock").strip() or None,
    default=None,
)


def _read_journal(parts: Parts) -> JournalFacts:
    text = body(parts, "journal")
    return JournalFacts(
        unfinished=tuple(unfinished(text)),
        applied=last_applied(text),
        gateway_restart_seconds=last_gateway_restart(text),
        seat_start_seconds=last_seat_starts(text),
    )


JOURNAL: Fact[JournalFacts] = Fact(
    name="journal",
    command=lambda state_dir: (
        f"[ -f {(p := shlex.quote(journal_path(state_dir)))} ] && "
        f"{{ mark journal; tail -n 200 {p}; }}\n"
    ),
    sections=("journal",),
    process=_read_journal,
    default=JournalFacts(),
)


def host_entries(
    models_root: str,
    model_paths: list[str],
    state_dir: str,
    sources: Mapping[str, tuple[str, str]] | None = None,
) -> tuple[str, ...]:
    """The script entries of the host-wide facts (beside the GPU and runtime ones);
    `sources`: for a model path a fetch would fill, its source's listing command and the
    temporary directory (`fleet.facts.model_files.SOURCES`)."""
    root = models_root.rstrip("/") or ""
    wanted = sorted({p.rstrip("/") for p in model_paths})
    outside = [p for p in wanted if p.rsplit("/", 1)[0] != root]
    return (
        MEMORY.entry(),
        CPU.entry(),
        MODELS.entry(root, outside),
        MISSING.entry(wanted),
        DISK.entry(root),
        FILES.entry(root, outside),
        SOURCES.entry(sources or {}),
        PARTIALS.entry(root),
        LOCK.entry(state_dir),
        JOURNAL.entry(state_dir),
    )
