"""Facts about model weights on disk: free space, each model's files, and a fetch's source.

Three `Fact`s of the host script (`fleet.facts.host_facts.host_entries` adds them):

- `DISK`: `df -PB1 <models_root>` (POSIX output: one line per filesystem, never wrapped),
  the room a fetch lands in;
- `FILES`: `find -printf '%P\t%s\t%A@\t%T@'` of every model directory and GGUF file
  (relative path, size, last read, last written), for `fleet models` (size, last used) and
  for checking a model against the file list fleet recorded when it fetched it
  (`.cache/` is hf's bookkeeping and not part of a model);
- `SOURCES`: for each model path that is absent, the listing of its source as the host
  itself sees it (over its own SSH key to the store: whether it is reachable, and how big
  it is), and what an interrupted copy already left in the temporary directory. The
  listing command is rendered above this layer (`fleet.render.model_fetch`);
- `PARTIALS`: every `.<name>.partial` of the models root (a fetch's temporary path) and
  its size (`du -sb`), for `fleet models prune` to offer the abandoned ones.

Parsers are pure and total; tests run them on recorded output.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from pydantic import Field

from fleet.base import CoreModel
from fleet.facts._text import clean_lines, to_int
from fleet.facts.script import Fact, Parts, body

FIND_FORMAT = r"%P\t%s\t%A@\t%T@\n"
FIND_FILES = f"-path \"$1/.cache\" -prune -o -type f -printf '{FIND_FORMAT}'"


class DiskFree(CoreModel):
    """The filesystem holding the models root, in bytes."""

    filesystem: str
    size: int
    used: int
    available: int
    mount: str


class ModelFile(CoreModel):
    """One file of a model: size, when it was last read and last written (seconds since
    the epoch, as find prints them)."""

    size: int
    accessed: float | None = None
    modified: str | None = None


class SourceListing(CoreModel):
    """What the host saw of a fetch's source: its files (path -> size; empty for the hub,
    whose sizes are known only from a manifest), or why it could not list it."""

    files: dict[str, int] = Field(default_factory=dict)
    error: str | None = None
    partial_bytes: int = Field(0, description="already in the temporary directory")

    @property
    def size(self) -> int:
        """Bytes the source holds."""
        return sum(self.files.values())


def parse_df(text: str) -> DiskFree | None:
    """`df -PB1 PATH`: the filesystem's line after the header, or None."""
    for line in clean_lines(text):
        words = line.split()
        if len(words) < 6 or words[0] == "Filesystem":
            continue
        numbers = [to_int(w) for w in words[1:4]]
        if None in numbers:
            continue
        size, used, available = (n or 0 for n in numbers)
        return DiskFree(
            filesystem=words[0], size=size, used=used, available=available, mount=words[5]
        )
    return None


def parse_file_list(text: str) -> dict[str, ModelFile]:
    """`find -printf '%P\\t%s\\t%A@\\t%T@\\n'`: relative path -> file ('' is a single file)."""
    files: dict[str, ModelFile] = {}
    for line in text.split("\n"):
        parts = line.split("\t")
        if len(parts) < 2 or (size := to_int(parts[1])) is None:
            continue
        accessed = _seconds(parts[2]) if len(parts) > 2 else None
        modified = parts[3].strip() or None if len(parts) > 3 else None
        files[parts[0]] = ModelFile(size=size, accessed=accessed, modified=modified)
    return dict(sorted(files.items()))


def _seconds(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


DISK: Fact[DiskFree | None] = Fact(
    name="disk",
    command=lambda root: f"mark df; df -PB1 {shlex.quote(root or '/')} 2>/dev/null\n",
    sections=("df",),
    process=lambda parts: parse_df(body(parts, "df")),
    default=None,
)


def _files_command(root: str, outside: list[str]) -> str:
    words = " ".join(shlex.quote(p) for p in outside)
    return (
        f'files() {{ mark files "$1"; find "$1" {FIND_FILES} 2>/dev/null; }}\n'
        f"for dir in {shlex.quote(root or '/')}/* {words}; do "
        'if [ -d "$dir" ]; then files "$dir"; '
        'else case "$dir" in *.gguf) [ -f "$dir" ] && files "$dir";; esac; fi; done\n'
    )


FILES: Fact[dict[str, dict[str, ModelFile]]] = Fact(
    name="model-files",
    command=_files_command,
    sections=("files",),
    process=lambda parts: {p: parse_file_list(t) for p, t in sorted(parts["files"].items())},
    default={},
)


def _sources_command(sources: Mapping[str, tuple[str, str]]) -> str:
    """For each absent model path: its source's listing (the command, run on the host) and
    the temporary directory's size."""
    lines = []
    for path, (listing, temporary) in sorted(sources.items()):
        p, t = shlex.quote(path), shlex.quote(temporary)
        lines.append(
            f"if [ ! -e {p} ]; then mark source {p}; ( {listing} ) 2>&1; "
            f"mark source-rc {p} $?; "
            f"[ -e {t} ] && {{ mark partial {p}; du -sb {t} | cut -f1; }}; fi\n"
        )
    return "".join(lines) or ":\n"  # an empty subshell is a syntax error


def _read_sources(parts: Parts) -> dict[str, SourceListing]:
    found = {}
    for key, text in sorted(parts["source"].items()):
        path, status = key, None
        for rc_key in parts["source-rc"]:
            if rc_key.rsplit(" ", 1)[0] == path:
                status = to_int(rc_key.rsplit(" ", 1)[-1])
        partial = to_int(parts["partial"].get(path, "").strip()) or 0
        if status == 0:
            files = {k: f.size for k, f in parse_file_list(text).items()}
            found[path] = SourceListing(files=files, partial_bytes=partial)
        else:
            reason = (clean_lines(text) or [f"exit status {status}"])[-1]
            found[path] = SourceListing(error=reason, partial_bytes=partial)
    return found


SOURCES: Fact[dict[str, SourceListing]] = Fact(
    name="model-sources",
    command=_sources_command,
    sections=("source", "source-rc", "partial"),
    process=_read_sources,
    default={},
)


def _partials_command(root: str) -> str:
    return (
        f"for dir in {shlex.quote(root or '/')}/.*.partial; do "
        '[ -e "$dir" ] && { mark partial-dir "$dir"; du -sb "$dir" | cut -f1; }; done\n'
    )


PARTIALS: Fact[dict[str, int]] = Fact(
    name="model-partials",
    command=_partials_command,
    sections=("partial-dir",),
    process=lambda parts: {
        path: to_int(text.strip()) or 0 for path, text in sorted(parts["partial-dir"].items())
    },
    default={},
)
