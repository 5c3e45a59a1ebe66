"""The one shell script that gathers all of a host's facts in a single SSH round trip.

`fact_script` builds it (called by reconciler.observe); `split_sections` cuts what it
printed into named sections for the parsers. Every command in it only reads: nvidia-smi
queries, /proc/<pid>/cgroup, each container's live /proc/<pid>/cmdline, `docker inspect`,
`docker logs`, `docker image inspect`, and the models' config.json and .PROVENANCE.txt.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable

from fleet.names import PROVENANCE_SUFFIX, journal_path, lock_path

MARK = "@@FLEET "

_PRELUDE = r"""set -u
mark() { printf '\n@@FLEET %s\n' "$*"; }
mark gpus
nvidia-smi --query-gpu=index,uuid,name,memory.total,memory.used \
  --format=csv,noheader,nounits 2>&1
mark gpus-rc $?
apps=$(nvidia-smi --query-compute-apps=pid,gpu_uuid,used_memory \
  --format=csv,noheader,nounits 2>/dev/null)
mark apps
printf '%s\n' "$apps"
for pid in $(printf '%s\n' "$apps" | cut -d, -f1 | tr -d ' '); do
  mark cgroup "$pid"; cat "/proc/$pid/cgroup" 2>/dev/null
done
ids=$(docker ps -aq --no-trunc 2>/dev/null)
mark docker-rc $?
if [ -n "$ids" ]; then
  mark inspect; docker inspect $ids
  mark images; docker image inspect $(docker inspect -f '{{.Image}}' $ids | sort -u)
  docker inspect -f '{{.Id}} {{.State.Pid}} {{.State.StartedAt}}' $ids |
  while read -r id pid started; do
    [ "$pid" -gt 0 ] && { mark cmdline "$id"; tr '\0' '\n' < "/proc/$pid/cmdline"; }
    mark logs "$id"; docker logs --since "$started" "$id" 2>&1 | head -n 20000
  done
fi
"""


def fact_script(
    models_root: str, model_paths: Iterable[str], compose_dir: str = "/srv/fleet"
) -> str:
    """The script for one host: its models, every model path desired/ names, and the
    apply lock and journal in its compose directory."""
    root = models_root.rstrip("/") or ""
    wanted = sorted({p.rstrip("/") for p in model_paths})
    outside = [p for p in wanted if p.rsplit("/", 1)[0] != root]
    lock = shlex.quote(lock_path(compose_dir))
    journal = shlex.quote(journal_path(compose_dir))
    return (
        _PRELUDE
        + f"""model() {{
  mark model "$1"; du -sb "$1" 2>/dev/null | cut -f1
  [ -f "$1/config.json" ] && {{ mark config "$1"; cat "$1/config.json"; }}
  [ -f "$1{PROVENANCE_SUFFIX}" ] && {{ mark provenance "$1"; cat "$1{PROVENANCE_SUFFIX}"; }}
}}
for dir in {shlex.quote(root or "/")}/* {_words(outside)}; do [ -d "$dir" ] && model "$dir"; done
for dir in {_words(wanted)}; do [ -d "$dir" ] || mark missing "$dir"; done
[ -f {lock} ] && {{ mark lock; cat {lock}; }}
[ -f {journal} ] && {{ mark journal; tail -n 200 {journal}; }}
mark end
"""
    )


def _words(paths: list[str]) -> str:
    return " ".join(shlex.quote(p) for p in paths)


def split_sections(output: str) -> list[tuple[str, str, str]]:
    """(kind, argument, body) for each `@@FLEET kind argument` section, in order."""
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
