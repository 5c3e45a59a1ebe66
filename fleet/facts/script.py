"""The shell script that gathers a host's facts in one SSH round trip, built from entries.

Each `Fact` pairs a section of the script's output with the command that prints it and
the pure parser that reads it (pyinfra's fact = command + parser). `host_script` builds
the whole-host script (called through `fleet.runtimes.host_script` by observe), with the
entries the host's runtime declares about its seats; `seat_script` only what the health
gate needs about one seat (its runtime's entries and the GPU processes). `split_sections`
cuts the output into `(section, argument, body)`. Every command only reads: nvidia-smi
queries, /proc/<pid>/cgroup, what the runtime reports of its seats, the models'
config.json and provenance, and the apply lock and journal.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum

from fleet.facts.gguf import parse_gguf_base64
from fleet.facts.journal import unfinished
from fleet.facts.meminfo import parse_meminfo
from fleet.facts.model_config import parse_model_config
from fleet.facts.nvidia_smi import (
    COMPUTE_APPS_FIELDS,
    GPU_QUERY_FIELDS,
    parse_compute_apps,
    parse_gpu_query,
    parse_nvidia_smi_table,
)
from fleet.facts.provenance import parse_provenance
from fleet.names import PROVENANCE_SUFFIX, journal_path, lock_path

MARK = "@@FLEET "
LOG_LINES = 20000  # the tail of a log read per container


class Section(StrEnum):
    """The sections of the script's output, in the order it prints them."""

    GPUS = "gpus"
    GPUS_RC = "gpus-rc"
    GPU_TABLE = "gpu-table"
    APPS = "apps"
    CGROUP = "cgroup"
    DOCKER_RC = "docker-rc"
    INSPECT = "inspect"
    IMAGES = "images"
    SYSTEMD_RC = "systemd-rc"  # the systemd runtime's (fleet.runtimes.systemd)
    UNIT = "unit"
    UNIT_FILE = "unit-file"
    CMDLINE = "cmdline"
    LOGS = "logs"
    MEMINFO = "meminfo"
    MODEL = "model"
    GGUF = "gguf"
    CONFIG = "config"
    PROVENANCE = "provenance"
    MISSING = "missing"
    COMPOSE = "compose"
    LOCK = "lock"
    JOURNAL = "journal"
    END = "end"


@dataclass(frozen=True)
class Fact:
    """One fact: the section it prints, the shell that prints it, the parser that reads it."""

    section: Section
    command: str
    parser: Callable[[str], object] | None = None


def _query(kind: str, fields: tuple[str, ...]) -> str:
    return f"nvidia-smi --query-{kind}={','.join(fields)} --format=csv,noheader,nounits"


GPU_FACTS = (
    Fact(
        Section.GPUS,
        f"mark gpus\n{_query('gpu', GPU_QUERY_FIELDS)} 2>&1\ngpus_rc=$?\nmark gpus-rc $gpus_rc\n",
        parse_gpu_query,
    ),
    Fact(  # only where the query failed, e.g. a driver that lacks a field: the table view
        Section.GPU_TABLE,
        '[ "$gpus_rc" = 0 ] || [ "$gpus_rc" = 127 ] || { mark gpu-table; nvidia-smi 2>&1; }\n',
        parse_nvidia_smi_table,
    ),
    Fact(
        Section.APPS,
        f"apps=$({_query('compute-apps', COMPUTE_APPS_FIELDS)} 2>/dev/null)\n"
        "mark apps\nprintf '%s\\n' \"$apps\"\n",
        parse_compute_apps,
    ),
    Fact(
        Section.CGROUP,
        "for pid in $(printf '%s\\n' \"$apps\" | cut -d, -f1 | tr -d ' '); do\n"
        '  mark cgroup "$pid"; cat "/proc/$pid/cgroup" 2>/dev/null\ndone\n',
    ),  # read by the host's runtime: which of its seats the process belongs to
)
# The lineage file beside a model directory or GGUF file: `<path>.PROVENANCE.txt`.
PROVENANCE_COMMAND = (
    f'  [ -f "$1{PROVENANCE_SUFFIX}" ] && '
    f'{{ mark provenance "$1"; cat "$1{PROVENANCE_SUFFIX}"; }}\n'
)
MODEL_FACTS = (
    Fact(Section.MODEL, 'model() {\n  mark model "$1"; du -sb "$1" 2>/dev/null | cut -f1\n'),
    Fact(
        Section.CONFIG,
        '  [ -f "$1/config.json" ] && { mark config "$1"; cat "$1/config.json"; }\n',
        parse_model_config,
    ),
    Fact(Section.PROVENANCE, PROVENANCE_COMMAND + "}\n", parse_provenance),
)
GGUF_HEAD_BYTES = 65536  # a GGUF file's keys come first; its tensors are never read
GGUF_FACTS = (
    Fact(
        Section.GGUF,
        'gguf() {\n  mark gguf "$1"; stat -c %s "$1" 2>/dev/null\n'
        f'  head -c {GGUF_HEAD_BYTES} "$1" | base64 | tr -d "\\n"; echo\n'
        + PROVENANCE_COMMAND
        + "}\n",
        parse_gguf_base64,
    ),
)
MEMORY_FACTS = (
    Fact(Section.MEMINFO, "mark meminfo; head -n 3 /proc/meminfo 2>/dev/null\n", parse_meminfo),
)
_PRELUDE = "set -u\nmark() { printf '\\n" + MARK + '%s\\n\' "$*"; }\n'


def apply_facts(compose_dir: str) -> tuple[Fact, ...]:
    """The apply lock (who holds it) and the tail of the apply journal of a host."""
    lock, journal = shlex.quote(lock_path(compose_dir)), shlex.quote(journal_path(compose_dir))
    return (
        Fact(Section.LOCK, f"[ -f {lock} ] && {{ mark lock; cat {lock}; }}\n"),
        Fact(
            Section.JOURNAL,
            f"[ -f {journal} ] && {{ mark journal; tail -n 200 {journal}; }}\n",
            unfinished,
        ),
    )


def _commands(facts: Iterable[Fact]) -> str:
    return "".join(fact.command for fact in facts)


def host_script(
    models_root: str,
    model_paths: Iterable[str],
    compose_dir: str,
    seat_facts: Iterable[Fact],
) -> str:
    """The script for one host: GPUs, what its runtime reports of every seat
    (`seat_facts`, `fleet.runtimes`), its models and every model path desired/ names, and
    the apply lock and journal in its compose directory."""
    root = models_root.rstrip("/") or ""
    wanted = sorted({p.rstrip("/") for p in model_paths})
    outside = [p for p in wanted if p.rsplit("/", 1)[0] != root]
    return (
        _PRELUDE
        + _commands(GPU_FACTS)
        + _commands(seat_facts)
        + _commands(MEMORY_FACTS)
        + _commands(MODEL_FACTS)
        + _commands(GGUF_FACTS)
        + f"for dir in {shlex.quote(root or '/')}/* {_words(outside)}; do "
        'if [ -d "$dir" ]; then model "$dir"; '
        'else case "$dir" in *.gguf) [ -f "$dir" ] && gguf "$dir";; esac; fi; done\n'
        + f'for dir in {_words(wanted)}; do [ -e "$dir" ] || mark missing "$dir"; done\n'
        + _commands(apply_facts(compose_dir))
        + "mark end\n"
    )


def seat_script(seat_facts: Iterable[Fact]) -> str:
    """Only what the health gate reads about one seat: the GPU processes and what its
    runtime reports of the seat (`seat_facts`: its state, live argv and log)."""
    return _PRELUDE + _commands(GPU_FACTS) + _commands(seat_facts) + "mark end\n"


def _words(paths: list[str]) -> str:
    return " ".join(shlex.quote(p) for p in paths)


def split_sections(output: str) -> list[tuple[str, str, str]]:
    """(section, argument, body) for each `@@FLEET section argument` part, in order."""
    sections: list[tuple[str, str, str]] = []
    kind, arg, body = "", "", []  # type: tuple[str, str, list[str]]
    for line in output.split("\n"):
        if line.startswith(MARK):
            if kind:
                sections.append((kind, arg, "\n".join(body).strip("\n")))
            kind, _, arg = line[len(MARK) :].partition(" ")
            body = []
        else:
            body.append(line)
    if kind:
        sections.append((kind, arg, "\n".join(body).strip("\n")))
    return sections
