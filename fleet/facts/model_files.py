"""Facts about model weights on disk: free space, each model's files, and a fetch's source.

Three `Fact`s of the host script (`fleet.facts.host_facts.host_entries` adds them):

- `DISK`: `df -PB1 <models_root>` (POSIX output: one line per filesystem, never wrapped),
  the room a fetch lands in;
- `FILES`: `find -printf '%s\t%A@\t%T@\t%P\0'` of every model directory and GGUF file
  (size, last read, last written, relative path: the name last and each record ended by a
  NUL, so a file name holding a tab or a newline is one name and cannot add a record of
  its own), for `fleet models` (size, last used) and
  for checking a model against the file list fleet recorded when it fetched it
  (`.cache/` is hf's bookkeeping and not part of a model);
- `SOURCES`: for each model path that is absent, the listing of its source as the host
  itself sees it (over its own SSH key to the store: whether it is reachable, and how big
  it is; a store's and the hub's listings are `size\tpath\0` records), and what an
  interrupted copy already left in the temporary directory a fetch would resume. The
  listing command and the temporary directory's glob are rendered above this layer
  (`fleet.render.model_fetch`);
- `PARTIALS`: every `.<name>.partial.<random>` of the models root (a fetch's temporary
  directory; also the older fixed `.<name>.partial`) and its size (`du -sb`), for
  `fleet models prune` to offer the abandoned ones.

Parsers are pure and total; tests run them on recorded output.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

from pydantic import Field

from fleet.base import CoreModel
from fleet.facts._text import clean_lines, to_int
from fleet.facts.script import Fact, Parts, body

FIND_FORMAT = r"%s\t%A@\t%T@\t%P\0"
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
    """What the host saw of a fetch's source: its files (path -> size, -1 where the hub
    did not say; empty where plan does not list it: `fleet.render.model_fetch`), or why it
    could not list it."""

    files: dict[str, int] = Field(default_factory=dict)
    error: str | None = None
    host_key_unknown: bool = Field(
        False, description="ssh refused only because the store's host key is not yet known"
    )
    partial_bytes: int = Field(0, description="already in the temporary directory")

    @property
    def size(self) -> int | None:
        """Bytes the source holds (None: not listed, or a file's size unknown)."""
        sizes = self.files.values()
        return sum(sizes) if sizes and min(sizes) >= 0 else None


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
    """`find -printf '%s\\t%A@\\t%T@\\t%P\\0'` (`FIND_FORMAT`): relative path -> file ('' is
    a single file); the path is everything after the third tab, up to the NUL."""
    files: dict[str, ModelFile] = {}
    for record in text.split("\0"):
        parts = record.split("\t", 3)
        if len(parts) < 4 or (size := to_int(parts[0])) is None:
            continue
        modified = parts[2].strip() or None
        files[parts[3]] = ModelFile(size=size, accessed=_seconds(parts[1]), modified=modified)
    return dict(sorted(files.items()))


def parse_source_list(text: str) -> dict[str, int]:
    """A source's listing, `size\\tpath\\0` records: path -> size (-1: the hub did not say)."""
    files: dict[str, int] = {}
    for record in text.split("\0"):
        size, tab, path = record.partition("\t")
        if tab and (number := to_int(size)) is not None:
            files[path] = number
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
    the size of the temporary directory a fetch would resume (the first of the glob's
    matches that is a directory of this user's, not a symlink)."""
    lines = []
    for path, (listing, temporary) in sorted(sources.items()):
        p = shlex.quote(path)
        mine = '[ -d "$t" ] && [ ! -L "$t" ] && [ -O "$t" ]'
        lines.append(
            f"if [ ! -e {p} ]; then mark source {p}; ( {listing} ) 2>&1; "
            f"mark source-rc {p} $?; for t in {temporary}; do {mine} && "
            f'{{ mark partial {p}; du -sb "$t" | cut -f1; break; }}; done; fi\n'
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
            files = parse_source_list(text)
            found[path] = SourceListing(files=files, partial_bytes=partial)
        else:
            reason = (clean_lines(text) or [f"exit status {status}"])[-1]
            unknown = _UNKNOWN_KEY.search(text) is not None and "HAS CHANGED" not in text
            found[path] = SourceListing(
                error=reason, host_key_unknown=unknown, partial_bytes=partial
            )
    return found


# OpenSSH under StrictHostKeyChecking=yes, for a host whose key it has never seen (a key
# that changed says REMOTE HOST IDENTIFICATION HAS CHANGED instead)
_UNKNOWN_KEY = re.compile(r"No \S+ host key is known for .* and you have requested strict checking")


SOURCES: Fact[dict[str, SourceListing]] = Fact(
    name="model-sources",
    command=_sources_command,
    sections=("source", "source-rc", "partial"),
    process=_read_sources,
    default={},
)


TEMPORARY_GLOB = "[A-Za-z0-9]" * 10  # the random part of a fetch's temporary directory


def _partials_command(root: str) -> str:
    base = shlex.quote(root or "/")
    return (
        f"for dir in {base}/.*.partial {base}/.*.partial.{TEMPORARY_GLOB}; do "
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
