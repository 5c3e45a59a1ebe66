"""What a model fetch runs on its destination host, and how fleet checks what landed.

Pure: called by observe (the source's listing, `fleet.facts.model_files.SOURCES`) and by
`reconciler.workflows.fetch` (the copy, the listing and digests of what landed, the
provenance, the rename). Everything runs ON the destination host: from a store, rsync over
SSH with the host's own key (`stores.<name>.identity_file`), so the controller never holds
the weights; from the hub, the host's `hf download`, the token read from stdin into the
environment, never written into the command. A copy lands in `<root>/.<name>.partial`
(rsync --partial resumes there after an interruption) and is renamed to the seat's path
only once its files match: the path a seat loads never holds half a model.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping

from fleet.facts.model_files import FIND_FILES
from fleet.facts.provenance import file_line, provenance_path
from fleet.spec.model_origin import ModelOrigin, ModelStore
from fleet.spec.models import DesiredFleet, Seat

PARTIAL_SUFFIX = ".partial"
SSH_OPTIONS = ("-o", "BatchMode=yes", "-o", "ConnectTimeout=10")
LISTING_TIMEOUT = 60  # seconds a store may take to list a model (every observe asks)


def fetches(desired: DesiredFleet) -> dict[tuple[str, str], tuple[ModelOrigin, list[Seat]]]:
    """(host, model path) -> its origin and the seats that load it, for declared origins."""
    found: dict[tuple[str, str], tuple[ModelOrigin, list[Seat]]] = {}
    for seat in sorted(desired.seats.values(), key=lambda s: s.name):
        if seat.model_origin is not None:
            key = (seat.host, seat.model.rstrip("/"))
            found.setdefault(key, (seat.model_origin, []))[1].append(seat)
    return found


def temporary_path(path: str) -> str:
    """Where a fetch lands before its rename: `/models/.Qwen3-32B.partial`."""
    parent, _, name = path.rstrip("/").rpartition("/")
    return f"{parent}/.{name}{PARTIAL_SUFFIX}"


def is_file_model(path: str) -> bool:
    """A single-file model (GGUF) rather than a directory."""
    return path.endswith(".gguf")


def _ssh(store: ModelStore, accept_new: bool = True) -> list[str]:
    """ssh's words for the store: its known_hosts when given (checked strictly), else the
    user's own, where a fetch (`accept_new`) records a store's first key and a listing
    during plan writes nothing (an unknown key fails it)."""
    words = ["ssh", "-i", store.identity_file, "-p", str(store.port), *SSH_OPTIONS]
    if store.known_hosts:
        words += ["-o", f"UserKnownHostsFile={store.known_hosts}"]
    checking = "accept-new" if accept_new and not store.known_hosts else "yes"
    return [*words, "-o", f"StrictHostKeyChecking={checking}"]


def source_listing(
    origin: ModelOrigin, stores: Mapping[str, ModelStore], accept_new: bool = False
) -> str:
    """The command listing the source from the destination host (`path\\tsize` lines), or,
    for the hub, checking that `hf` is installed (sizes come from a manifest). Observe
    (plan) lists without writing a known_hosts entry; a fetch lists with `accept_new`."""
    if origin.kind == "hf":
        return (
            "command -v hf >/dev/null 2>&1 || "
            "{ echo 'hf (huggingface_hub) is not installed on this host'; exit 127; }"
        )
    store = stores[origin.store or ""]
    remote = shlex.join(["find", origin.location, "-type", "f", "-printf", r"%P\t%s\n"])
    login = f"{store.user}@{store.address}"
    words = ["timeout", str(LISTING_TIMEOUT), *_ssh(store, accept_new), "--", login]
    return shlex.join([*words, remote])


# The hub's own file list of a repository at a revision (`path\tsize` lines), read with
# the huggingface_hub that `hf` runs on: the Python of hf's own script.
_HUB_FILES = (
    "import sys\n"
    "from huggingface_hub import HfApi\n"
    "info = HfApi().model_info(sys.argv[1], revision=sys.argv[2] or None, files_metadata=True)\n"
    "for f in info.siblings or []:\n"
    "    print(f'{f.rfilename}\\t{f.size if f.size is not None else -1}')\n"
)


def hub_listing(origin: ModelOrigin) -> str:
    """The command listing an hf:// source's files as the hub has them, run on the
    destination host (a token, when the origin has one, read from stdin first)."""
    token = "IFS= read -r HF_TOKEN && export HF_TOKEN && " if origin.token else ""
    python = '"$(sed -n \'1s/^#! *//p\' "$(command -v hf)")"'
    words = shlex.join(["-c", _HUB_FILES, origin.location, origin.pinned_revision or ""])
    return f"hub_python={python}; {token}timeout {LISTING_TIMEOUT} $hub_python {words}"


def copy_command(origin: ModelOrigin, stores: Mapping[str, ModelStore], path: str) -> str:
    """The copy into the temporary path; run again, it resumes (rsync --partial, or hf's
    own resume in its local dir)."""
    tmp = temporary_path(path)
    parent = shlex.quote(tmp.rpartition("/")[0] or "/")
    start = f"mkdir -p {parent} && {_own_temporary(tmp)}"
    if origin.kind == "hf":
        words = ["hf", "download", origin.location, "--local-dir", tmp]
        if (revision := origin.pinned_revision) is not None:
            words[3:3] = ["--revision", revision]
        token = "IFS= read -r HF_TOKEN && export HF_TOKEN && " if origin.token else ""
        return f"{start} && {token}{shlex.join(words)}"
    store = stores[origin.store or ""]
    single = is_file_model(path)
    source = f"{store.user}@{store.address}:{origin.location.rstrip('/')}{'' if single else '/'}"
    target = tmp if single else tmp + "/"
    rsync = ["rsync", "-a", "--partial", "-e", shlex.join(_ssh(store)), source, target]
    return f"{start} && {shlex.join(rsync)}"


def _own_temporary(tmp: str) -> str:
    """Shell refusing a temporary path that someone else made (a symlink to elsewhere, or
    not owned by the fetching user): its name is predictable, so it is checked before a
    copy writes through it."""
    t = shlex.quote(tmp)
    refusal = shlex.quote(f"{tmp} is a symlink or not owned by this user: refused")
    mine = f"[ ! -L {t} ] && {{ [ ! -e {t} ] || [ -O {t} ]; }}"
    return f"{{ {mine} || {{ echo {refusal} >&2; exit 1; }}; }}"


def landed_listing(path: str) -> str:
    """`path\\tsize\\taccessed\\tmodified` lines of what is in the temporary path (hf's
    `.cache/` left out)."""
    return f'set -- {shlex.quote(temporary_path(path))}; find "$1" {FIND_FILES}'


def digest_command(path: str, files: list[str]) -> str:
    """sha256sum of these files of the temporary path (a single file: the file itself)."""
    tmp = shlex.quote(temporary_path(path))
    if is_file_model(path):
        return f"sha256sum -- {tmp}"
    return f"cd {tmp} && sha256sum -- {' '.join(shlex.quote(f) for f in files)}"


def installed_digest_command(path: str, files: list[str]) -> str:
    """sha256sum of these files of an installed model (a single file: the file itself)."""
    if is_file_model(path):
        return shlex.join(["sha256sum", "--", path])
    return f"cd {shlex.quote(path)} && sha256sum -- {' '.join(shlex.quote(f) for f in files)}"


def parse_digests(text: str, path: str) -> dict[str, str]:
    """`sha256sum` output -> relative path ('' for a single file) -> digest."""
    found = {}
    for line in text.splitlines():
        digest, _, name = line.partition("  ")
        if len(digest) == 64:
            found["" if is_file_model(path) else name] = digest
    return found


def finish_command(path: str) -> str:
    """The rename that makes the fetched model appear at the seat's path."""
    return shlex.join(["mv", "-T", "--", temporary_path(path), path.rstrip("/")])


def mismatches(
    expected: Mapping[str, int | None],
    landed: Mapping[str, int],
    digests: Mapping[str, str] | None = None,
    landed_digests: Mapping[str, str] | None = None,
) -> list[str]:
    """What differs between what should have landed and what did (empty: it matches):
    a file missing, of another size or digest, or one the source does not have (left in
    the temporary path by someone else, or added to the source after its listing)."""
    found = [f"{name or 'the file'}: missing" for name in sorted(set(expected) - set(landed))]
    found += [
        f"{name or 'the file'}: not in the source" for name in sorted(set(landed) - set(expected))
    ]
    for name in sorted(set(expected) & set(landed)):
        size = expected[name]
        if size is not None and landed[name] != size:
            found.append(f"{name or 'the file'}: {landed[name]} bytes, expected {size}")
    for name, digest in sorted((digests or {}).items()):
        got = (landed_digests or {}).get(name)
        if got is not None and got != digest:
            found.append(f"{name or 'the file'}: sha256 {got[:12]}..., expected {digest[:12]}...")
    if not landed:
        found.append("nothing landed")
    return found


def expected_digests(origin: ModelOrigin) -> dict[str, str]:
    """The digests desired/ declares: a single file's, or a manifest's."""
    if origin.sha256:
        return {"": origin.sha256}
    return {k: v.sha256 for k, v in (origin.manifest or {}).items() if v.sha256}


def render_provenance(
    origin: ModelOrigin,
    files: Mapping[str, int],
    digests: Mapping[str, str],
    who: str,
    when: str,
    mtimes: Mapping[str, str] | None = None,
) -> str:
    """The `.PROVENANCE.txt` beside a fetched model: its lineage entries, then its files."""
    lines = [
        "# Written by fleet when it fetched this model; the files below are checked.",
        f"Source: {origin.source}",
    ]
    if (revision := origin.pinned_revision) is not None:
        lines.append(f"Revision: {revision}")
    lines += [
        f"Fetched by: {who}",
        f"Fetched at: {when}",
        f"Files: {len(files)}",
        f"Size: {sum(files.values())}",
        "# files: size, sha256 (or -), @mtime, path",
    ]
    lines += [
        file_line(name, size, digests.get(name), (mtimes or {}).get(name))
        for name, size in sorted(files.items())
    ]
    return "\n".join(lines) + "\n"


def provenance_file(path: str) -> str:
    """Where a fetched model's provenance goes: beside it."""
    return provenance_path(path)
