"""Model weights on a `FakeHost`: its model directories, a store it copies from, the hub.

A fake host's `models` maps a model path to its files (relative path -> size; a GGUF
file's single file is ''), `partial` the temporary directories of copies under way
(`<root>/.<name>.partial.<random>`, as `mktemp -d` names them: `temporary` gives one), and
`disk_free` the bytes its models root's filesystem has left. `stores` are the model
stores it reaches by address (`FakeStore`: its models, whether it answers) and `hub` the
Hugging Face repositories `hf download` finds there. These answer the commands
`fleet.render.model_fetch` renders (the temporary directory, rsync under `timeout`,
`hf download`, the landed listing, sha256sum, the rename), `du -sb`, prune's `rm -rf` and
the fact script's model
sections (`model_sections`). `copy_limit` stops the next copy after that many files,
exit 20 as rsync says when it is killed; `copied` lists every file a copy transferred,
so a test sees a resumed copy bring only the rest. A file's digest is `fake_digest`, its
mtime `MODIFIED` unless `modified` says otherwise (a file written since), and a file in
`corrupt` hashes to another digest (its bytes changed, its size and mtime kept).
"""

from __future__ import annotations

import hashlib
import re
import secrets
import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fleet.facts.script import MARK
from fleet.names import PROVENANCE_SUFFIX
from fleet.render.model_fetch import is_temporary_of, temporary_prefix
from reconciler.host import CommandResult

if TYPE_CHECKING:
    from tests.fakes.host import FakeHost

OK = CommandResult(0, "", "")
ACCESSED = 1_790_000_000.0  # when a fake model's files were last read (2026-09)
MODIFIED = "1789000000.0000000000"  # when they were written, as find's %T@ prints it
KILLED = CommandResult(20, "", "rsync error: received SIGINT, SIGTERM, or SIGHUP (code 20)")


@dataclass
class FakeStore:
    """A model store reached over SSH: its models by path, and whether it answers."""

    address: str
    models: dict[str, dict[str, int]] = field(default_factory=dict)
    reachable: bool = True
    key_known: bool = True  # the host's known_hosts holds the store's key


def fake_digest(name: str, size: int) -> str:
    """The sha256 a fake file has."""
    return hashlib.sha256(f"{name}:{size}".encode()).hexdigest()


def section(mark: str, kind: str, arg: str) -> str:
    """A section's first line as the script's `mark` prints it: an argument holding a
    newline, or starting with `%`, as `%` and its bytes in hex."""
    if "\n" in arg or arg.startswith("%"):
        arg = "%" + arg.encode().hex()
    return f"{mark}{kind} {arg}"


def model_sections(host: FakeHost, script: str, mark: str = MARK) -> list[str]:
    """The fact script's model, files, provenance, df and source sections for this host."""
    parts = []
    for path, files in sorted(host.models.items()):
        size = str(sum(files.values()))
        parts += [section(mark, "gguf", path), size, ""] if path.endswith(".gguf") else []
        parts += [] if path.endswith(".gguf") else [section(mark, "model", path), size]
        if (lineage := host.files.get(path + PROVENANCE_SUFFIX)) is not None:
            parts += [section(mark, "provenance", path), lineage]
        parts.append(section(mark, "files", path))
        parts.append(
            "".join(
                f"{n}\t{host.accessed.get(path, ACCESSED)}\t"
                f"{host.modified.get((path, name), MODIFIED)}\t{name}\0"
                for name, n in files.items()
            )
        )
    for tmp, files in sorted(host.partial.items()):
        parts += [section(mark, "partial-dir", tmp), str(sum(files.values()))]
    parts += [f"{mark}df", "Filesystem 1-blocks Used Available Capacity Mounted on"]
    parts.append(f"/dev/fake 4000000000000 1 {host.disk_free} 1% /models")
    pattern = r"if \[ ! -e (\S+) \]; then mark source \S+; \( (.*?) \) 2>&1; mark source-rc"
    for match in re.finditer(pattern, script, re.DOTALL):
        path = shlex.split(match.group(1))[0]
        if path in host.models:
            continue
        listed = listing(host, match.group(2))
        parts += [f"{mark}source {path}", listed.stdout + listed.stderr]
        parts.append(f"{mark}source-rc {path} {listed.exit_status}")
        if (tmp := _resumed(host, path)) is not None:
            parts += [f"{mark}partial {path}", str(sum(host.partial[tmp].values()))]
    return parts


def temporary(path: str, random: str = "fAkE012345") -> str:
    """A temporary directory a fetch of `path` makes (`mktemp -d`'s random part)."""
    return temporary_prefix(path) + random


def _resumed(host: FakeHost, path: str) -> str | None:
    """The temporary directory of a fetch of `path` that a fetch would resume."""
    return next((t for t in sorted(host.partial) if is_temporary_of(t, path)), None)


def _directory(landing: str) -> str:
    """The temporary directory a copy lands in (a single file: the one holding it)."""
    parent = landing.rpartition("/")[0]
    return parent if re.search(r"\.partial\.[A-Za-z0-9]{10}$", parent) else landing


def make_temporary(host: FakeHost, command: str) -> CommandResult:
    """`temporary_command`: the directory a fetch would resume, else a new one."""
    found = re.search(r"mktemp -d (\S+)\)", command)
    assert found is not None, command
    prefix = shlex.split(found.group(1))[0].removesuffix("X" * 10)
    path = prefix.rpartition("/")[0] + "/" + prefix.rpartition("/")[2][1:].removesuffix(".partial.")
    tmp = _resumed(host, path) or temporary(path, secrets.token_hex(5))
    host.partial.setdefault(tmp, {})
    return CommandResult(0, f"{tmp}\n", "")


def listing(host: FakeHost, command: str) -> CommandResult:
    """A source's listing as the host runs it: over ssh to a store, or `command -v hf`."""
    if command.startswith("command -v hf"):
        if not host.has_hf:
            return CommandResult(127, "hf (huggingface_hub) is not installed", "")
        return hub_files(host, command, None) if "hub_python=" in command else OK
    words = shlex.split(command)
    store = _store(host, words)
    if isinstance(store, CommandResult):
        return store
    remote = shlex.split(words[-1])
    files = store.models.get(remote[1].rstrip("/"))
    if files is None:
        return CommandResult(1, "", f"find: '{remote[1]}': No such file or directory")
    return CommandResult(0, "".join(f"{size}\t{name}\0" for name, size in files.items()), "")


def _store(host: FakeHost, words: list[str]) -> FakeStore | CommandResult:
    login = next(w for w in words if "@" in w and not w.startswith("-"))
    address = login.split("@", 1)[1].split(":", 1)[0]
    store = host.stores.get(address)
    if store is None or not store.reachable:
        return CommandResult(255, "", f"ssh: connect to host {address} port 22: Connection refused")
    checking = re.search(r"StrictHostKeyChecking=(\S+)", " ".join(words))
    if not store.key_known and checking is not None and checking.group(1) == "yes":
        return CommandResult(
            255,
            "",
            f"No ED25519 host key is known for {address} and you have requested strict "
            "checking.\r\nHost key verification failed.\r\n",
        )
    store.key_known = True  # accept-new records it
    return store


def hub_files(host: FakeHost, command: str, stdin: str | None) -> CommandResult:
    """The hub's file list of a repository (`render.hub_listing`), as hf's Python prints it."""
    if not host.has_hf:
        return CommandResult(127, "", "sed: can't read : No such file or directory")
    repo = shlex.split(command.split(" $hub_python ", 1)[1])[2]
    if stdin is not None:  # the token, when the command reads one
        host.tokens.append(stdin)
    files = host.hub.get(repo)
    if files is None:
        return CommandResult(1, "", f"huggingface_hub.errors.RepositoryNotFoundError: {repo}")
    return CommandResult(0, "".join(f"{size}\t{name}\0" for name, size in files.items()), "")


def copy(host: FakeHost, inner: str, stdin: str | None) -> CommandResult:
    """`mkdir -p DIR && rsync ... SRC TMP` or `mkdir -p DIR && [token &&] hf download ...`."""
    words = shlex.split(inner.split(" && ")[-1])
    if words[0] == "hf":
        repo, tmp = words[2], words[words.index("--local-dir") + 1]
        host.tokens.append(stdin or "")
        files = host.hub.get(repo)
        if files is None:
            return CommandResult(1, "", f"Repository Not Found for url: {repo}")
    else:
        store = _store(host, words)
        if isinstance(store, CommandResult):
            return store
        source, tmp = words[-2].split(":", 1)[1].rstrip("/"), words[-1].rstrip("/")
        files = store.models.get(source, {})
    landed = host.partial.setdefault(_directory(tmp.rstrip("/")), {})
    for count, (name, size) in enumerate(sorted(files.items())):
        if host.copy_limit is not None and count >= host.copy_limit:
            host.copy_limit = None
            return KILLED
        if landed.get(name) != size:
            landed[name] = size
            host.copied.append(name)
    return OK


PREFIXES = (
    "unset t; for d in ",
    "hub_python=",
    "timeout ",
    "set -- ",
    "cd ",
    "sha256sum ",
    "mv -T ",
    "du -sb ",
    "rm -rf -- ",
    "ssh ",
)


def handles(host: FakeHost, command: str) -> bool:
    """Is this one of the model commands? (`cd` only into a copy being checked: other
    commands change directory too, e.g. the systemd runtime's unit listing.)"""
    if not command.startswith(PREFIXES):
        return False
    if not command.startswith("cd "):
        return True
    return shlex.split(command)[1] in host.partial.keys() | host.models.keys()


def run(host: FakeHost, command: str, stdin: str | None) -> CommandResult:
    """One of the model commands (those `handles` says are)."""
    if command.startswith("hub_python="):
        return hub_files(host, command, stdin)
    if command.startswith("unset t; "):
        return make_temporary(host, command)
    words = shlex.split(command.split(" 2>/dev/null")[0].split("; find")[0])
    if words[0] == "timeout" and words[2] == "sh":
        return copy(host, words[4], stdin)
    if words[0] == "set":
        files = host.partial.get(_directory(words[2]), {})
        lines = (f"{s}\t{ACCESSED}\t{MODIFIED}\t{n}\0" for n, s in files.items())
        return CommandResult(0, "".join(lines), "")
    if words[0] in ("cd", "sha256sum"):
        return _digests(host, words)
    if words[0] == "mv":
        host.models[words[4]] = host.partial.pop(_directory(words[3]))
        return OK
    if words[0] == "du":
        files = host.partial.get(words[2])
        return CommandResult(0, f"{sum(files.values())}\n" if files is not None else "", "")
    if words[0] == "rm":  # prune's `rm -rf -- PATH PATH.PROVENANCE.txt`
        host.models.pop(words[3], None)
        host.partial.pop(words[3], None)
        host.files.pop(words[4], None)
        host.journal.append(("removed", words[3]))
        return OK
    return listing(host, command)


def _digests(host: FakeHost, words: list[str]) -> CommandResult:
    """`cd DIR && sha256sum -- FILES`, or `sha256sum -- FILE` of a single file, of a copy
    being checked or of an installed model."""
    where = words[2] if words[0] == "sha256sum" else words[1]
    where = _directory(where) if _directory(where) in host.partial else where
    files = host.partial.get(where, host.models.get(where, {}))
    if words[0] == "sha256sum":
        ((name, size),) = files.items()
        return CommandResult(0, f"{_digest(host, where, name, size)}  {words[2]}\n", "")
    lines = (f"{_digest(host, where, n, files[n])}  {n}\n" for n in words[5:])
    return CommandResult(0, "".join(lines), "")


def _digest(host: FakeHost, where: str, name: str, size: int) -> str:
    changed = (where, name) in host.corrupt
    return fake_digest(name + ("~" if changed else ""), size)
