"""What a model fetch runs on its destination host, and how fleet checks what landed.

Pure: called by observe (the source's listing, `fleet.facts.model_files.SOURCES`) and by
`reconciler.workflows.fetch` (the copy, the listing and digests of what landed, the
provenance, the rename). Everything runs ON the destination host: from a store, rsync over
SSH with the host's own key (`stores.<name>.identity_file`), so the controller never holds
the weights; from the hub, the host's `hf download`, the token read from stdin into the
environment, never written into the command. A copy lands in a temporary directory of
the models root, `<root>/.<name>.partial.<10 random letters and digits>`, which the host
creates exclusively (`mktemp -d`: nobody can make it, or a symlink by its name, in
advance) or which an interrupted fetch of this user's left (rsync --partial and hf resume
there; a symlink or another owner's directory is never taken); a single file lands inside
it under its own name. The copy is renamed to the seat's path only once its files match:
the path a seat loads never holds half a model. Listings are `size\tpath\0` records
(`fleet.facts.model_files`), so a file name cannot add a line of its own.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

from fleet.facts.model_files import FIND_FILES, TEMPORARY_GLOB
from fleet.facts.provenance import file_line, provenance_path
from fleet.spec.model_origin import ModelOrigin, ModelStore
from fleet.spec.models import DesiredFleet, Seat

PARTIAL_SUFFIX = ".partial"
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # never in a model's file name
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


def temporary_prefix(path: str) -> str:
    """What a fetch's temporary directory is named before its random part:
    `/models/.Qwen3-32B.partial.`."""
    parent, _, name = path.rstrip("/").rpartition("/")
    return f"{parent}/.{name}{PARTIAL_SUFFIX}."


def is_temporary_of(temporary: str, path: str) -> bool:
    """Is this a temporary directory a fetch of `path` makes (and would resume)?"""
    prefix = re.escape(temporary_prefix(path))
    return re.fullmatch(prefix + "[A-Za-z0-9]{10}", temporary) is not None


def temporary_glob(path: str) -> str:
    """Shell words matching the temporary directories of a fetch of `path`."""
    return shlex.quote(temporary_prefix(path)) + TEMPORARY_GLOB


def temporary_command(path: str) -> str:
    """Shell printing the temporary directory a fetch of `path` copies into: the one an
    interrupted fetch of this user left (a directory, not a symlink), else a new one that
    `mktemp -d` creates exclusively (mode 0755, as a plain mkdir would leave it)."""
    prefix = temporary_prefix(path)
    parent = shlex.quote(prefix.rpartition("/")[0] or "/")
    template = shlex.quote(prefix + "X" * 10)
    mine = '[ -d "$d" ] && [ ! -L "$d" ] && [ -O "$d" ]'
    return (
        f"unset t; for d in {temporary_glob(path)}; do if {mine}; then t=$d; break; fi; done; "
        f'[ -n "${{t:-}}" ] || {{ mkdir -p {parent} && t=$(mktemp -d {template}) && '
        f'chmod 0755 "$t"; }} && printf \'%s\\n\' "$t"'
    )


def parse_temporary(path: str, printed: str) -> str | None:
    """The temporary directory `temporary_command` printed, if it is one of `path`'s."""
    found = printed.strip("\n")
    return found if is_temporary_of(found, path) else None


def landing(path: str, temporary: str) -> str:
    """Where the copy itself goes: the temporary directory, or a file inside it."""
    return f"{temporary}/{path.rpartition('/')[2]}" if is_file_model(path) else temporary


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


HF_MISSING = "command -v hf >/dev/null 2>&1 || " + (
    "{ echo 'hf (huggingface_hub) is not installed on this host'; exit 127; }"
)


def hub_listed_in_plan(origin: ModelOrigin) -> bool:
    """Does plan read the hub's file list of this origin, as apply does? Apply reads it
    for an hf:// source without a manifest; plan too, but for one that needs a token:
    plan holds no secret, so that list is first read at apply."""
    return origin.kind == "hf" and not origin.manifest and not origin.token


def source_listing(
    origin: ModelOrigin, stores: Mapping[str, ModelStore], accept_new: bool = False
) -> str:
    """The command listing the source from the destination host (`size\\tpath\\0`
    records): the store's files, or the hub's file list where apply reads it too
    (`hub_listed_in_plan`), else only whether `hf` is installed (sizes from a manifest).
    Observe (plan) lists without writing a known_hosts entry; a fetch with `accept_new`."""
    if origin.kind == "hf":
        return f"{HF_MISSING}; {hub_listing(origin)}" if hub_listed_in_plan(origin) else HF_MISSING
    store = stores[origin.store or ""]
    remote = shlex.join(["find", origin.location, "-type", "f", "-printf", r"%s\t%P\0"])
    login = f"{store.user}@{store.address}"
    words = ["timeout", str(LISTING_TIMEOUT), *_ssh(store, accept_new), "--", login]
    return shlex.join([*words, remote])


# The hub's own file list of a repository at a revision (`size\tpath\0` records), read
# with the huggingface_hub that `hf` runs on: the Python of hf's own script.
_HUB_FILES = (
    "import sys\n"
    "from huggingface_hub import HfApi\n"
    "info = HfApi().model_info(sys.argv[1], revision=sys.argv[2] or None, files_metadata=True)\n"
    "for f in info.siblings or []:\n"
    "    sys.stdout.write(f'{f.size if f.size is not None else -1}\\t{f.rfilename}\\0')\n"
)


def hub_listing(origin: ModelOrigin) -> str:
    """The command listing an hf:// source's files as the hub has them, run on the
    destination host (a token, when the origin has one, read from stdin first)."""
    token = "IFS= read -r HF_TOKEN && export HF_TOKEN && " if origin.token else ""
    python = '"$(sed -n \'1s/^#! *//p\' "$(command -v hf)")"'
    words = shlex.join(["-c", _HUB_FILES, origin.location, origin.pinned_revision or ""])
    return f"hub_python={python}; {token}timeout {LISTING_TIMEOUT} $hub_python {words}"


def copy_command(
    origin: ModelOrigin, stores: Mapping[str, ModelStore], path: str, temporary: str
) -> str:
    """The copy into the temporary directory (`temporary_command`'s); run again, it
    resumes (rsync --partial, or hf's own resume in its local dir)."""
    tmp = landing(path, temporary)
    start = _own_temporary(temporary)
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
    """Shell refusing a temporary directory that is not this user's own directory (a
    symlink to elsewhere, another owner's) when the copy starts."""
    t = shlex.quote(tmp)
    refusal = shlex.quote(f"{tmp} is a symlink or not this user's directory: refused")
    mine = f"[ ! -L {t} ] && [ -d {t} ] && [ -O {t} ]"
    return f"{{ {mine} || {{ echo {refusal} >&2; exit 1; }}; }}"


def landed_listing(path: str, temporary: str) -> str:
    """`FIND_FORMAT` records of what is in the temporary directory (hf's `.cache/` left
    out; a single file: that file alone)."""
    return f'set -- {shlex.quote(landing(path, temporary))}; find "$1" {FIND_FILES}'


def digest_command(path: str, files: list[str], temporary: str) -> str:
    """sha256sum of these files of the temporary directory (a single file: the file)."""
    tmp = shlex.quote(landing(path, temporary))
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
    for line in text.split("\n"):
        escaped = line.startswith("\\")  # GNU's form for a name with `\\` or a newline
        digest, _, name = line.removeprefix("\\").partition("  ")
        if escaped:
            name = re.sub(r"\\(.)", lambda m: "\n" if m[1] == "n" else m[1], name)
        if len(digest) == 64:
            found["" if is_file_model(path) else name] = digest
    return found


def finish_command(path: str, temporary: str) -> str:
    """The rename that makes the fetched model appear at the seat's path (a single file:
    out of its temporary directory, which is then removed)."""
    move = shlex.join(["mv", "-T", "--", landing(path, temporary), path.rstrip("/")])
    if not is_file_model(path):
        return move
    return f"{move} && {shlex.join(['rmdir', '--', temporary])}"


def mismatches(
    expected: Mapping[str, int | None],
    landed: Mapping[str, int],
    digests: Mapping[str, str] | None = None,
    landed_digests: Mapping[str, str] | None = None,
) -> list[str]:
    """What differs between what should have landed and what did (empty: it matches):
    a file missing, of another size or digest, or one the source does not have (left in
    the temporary path by someone else, or added to the source after its listing); and a
    file name holding a control character, which would forge a line of the provenance."""
    found = [
        f"{name!r}: a control character in a file name"
        for name in sorted(set(landed) | set(expected))
        if _CONTROL.search(name)
    ]
    found += [f"{name or 'the file'}: missing" for name in sorted(set(expected) - set(landed))]
    found += [
        f"{name or 'the file'}: not in the source" for name in sorted(set(landed) - set(expected))
    ]
    for name in sorted(set(expected) & set(landed)):
        size = expected[name]
        if size is not None and landed[name] != size:
            found.append(f"{name or 'the file'}: {landed[name]} bytes, expected {size}")
    for name, digest in sorted((digests or {}).items()):
        got = (landed_digests or {}).get(name)
        if got is None and name in landed:
            found.append(f"{name or 'the file'}: its sha256 could not be read")
        elif got is not None and got != digest:
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
