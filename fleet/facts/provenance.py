"""A model's lineage from `<model>.PROVENANCE.txt`, the file beside its directory (or its
GGUF file).

Called by the reconciler after reading the file next to each seat's model directory, and
by the inventory, which reports where a checkpoint came from (base model, quantizer,
source URL, revision). Operators write these by hand: `Key: value` or `key = value` lines
(optionally as `- ` list items) are lineage entries, in order; everything else — prose,
headings, commented lines — is kept verbatim as free text. Fleet writes one when it
fetches a model (`fleet.render.model_fetch`): its entries (source, revision, who, when),
then one free-text line per file, `<size> <sha256 or -> @<mtime> <relative path>` (the
mtime as find's `%T@` printed it; files fleet recorded before it noted mtimes lack it),
which `recorded_files` reads back. The file sits beside the model
directory, not inside it: `/models/Qwen3-8B` -> `/models/Qwen3-8B.PROVENANCE.txt`, and
`/models/qwen3-8b-q4_k_m.gguf` -> `/models/qwen3-8b-q4_k_m.gguf.PROVENANCE.txt`.
"""

from __future__ import annotations

import re

from fleet.base import CoreModel
from fleet.facts._text import clean_lines
from fleet.names import PROVENANCE_SUFFIX

_ENTRY = re.compile(
    r"^\s*(?:[-*]\s+)?(?P<key>[A-Za-z][\w.\-/()]*(?: [\w.\-/()]+){0,3}?)"
    r"\s*(?P<sep>:|=)\s*(?P<value>.*?)\s*$"
)


class ProvenanceEntry(CoreModel):
    """One `key: value` line, the key as written."""

    key: str
    value: str


class Provenance(CoreModel):
    """Lineage entries in file order, and the rest of the file as free text."""

    entries: tuple[ProvenanceEntry, ...] = ()
    free_text: str = ""

    def get(self, key: str) -> str | None:
        """The last value for a key, matched ignoring case, spaces, `-` and `_`."""
        wanted = normalize_key(key)
        values = [entry.value for entry in self.entries if normalize_key(entry.key) == wanted]
        return values[-1] if values else None

    def as_dict(self) -> dict[str, str]:
        """Entries by normalised key (a repeated key keeps its last value)."""
        return {normalize_key(entry.key): entry.value for entry in self.entries}


class RecordedFile(CoreModel):
    """A file fleet recorded when it fetched a model: its size and digest (if hashed)."""

    size: int
    sha256: str | None = None
    mtime: str | None = None


_FILE_LINE = re.compile(
    r"^(?P<size>\d+) (?P<sha>[0-9a-f]{64}|-)(?: @(?P<mtime>\d+(?:\.\d+)?))?(?: (?P<path>.*))?$"
)


def file_line(path: str, size: int, sha256: str | None, mtime: str | None = None) -> str:
    """One file's line in a provenance file fleet writes."""
    stamp = f" @{mtime}" if mtime else ""
    return f"{size} {sha256 or '-'}{stamp}" + (f" {path}" if path else "")  # '': a single file


def recorded_files(provenance: Provenance) -> dict[str, RecordedFile] | None:
    """The files a fleet-written provenance lists (None: it lists none)."""
    files = {}
    for line in provenance.free_text.split("\n"):
        if match := _FILE_LINE.match(line):
            sha = None if match["sha"] == "-" else match["sha"]
            files[match["path"] or ""] = RecordedFile(
                size=int(match["size"]), sha256=sha, mtime=match["mtime"]
            )
    return files or None


def provenance_path(model_dir: str) -> str:
    """Where the provenance of a model directory lives: beside it, not inside."""
    return model_dir.rstrip("/") + PROVENANCE_SUFFIX


def normalize_key(key: str) -> str:
    """`Base Model`, `base-model` and `base_model` are one key: `base_model`."""
    return re.sub(r"[\s\-_]+", "_", key.strip().lower())


def parse_provenance(text: str) -> Provenance:
    """Split a provenance file into entries and free text; never raises."""
    entries: list[ProvenanceEntry] = []
    free: list[str] = []
    for line in clean_lines(text):
        entry = _entry(line)
        if entry is None:
            free.append(line)
        else:
            entries.append(entry)
    return Provenance(entries=tuple(entries), free_text="\n".join(free).strip("\n"))


def _entry(line: str) -> ProvenanceEntry | None:
    """A `key: value` line, unless it is a comment, a URL or a heading without a value."""
    if line.lstrip().startswith(("#", "//")):
        return None
    match = _ENTRY.match(line)
    if match is None or not match.group("value"):
        return None
    if match.group("sep") == ":" and match.group("value").startswith("//"):
        return None  # `https://...` on a line of its own is prose, not a key.
    return ProvenanceEntry(key=match.group("key").strip(), value=match.group("value"))
