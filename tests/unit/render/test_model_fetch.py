"""What a fetch runs on its host, word for word, and how what landed is judged."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from fleet.render import model_fetch
from fleet.spec.model_origin import ModelOrigin, ModelStore

STORES = {"nas": ModelStore(address="10.0.0.9", port=2222, user="models", known_hosts="/etc/k")}
COMMIT = "fe8a4ea1ffedaf415f4da2f062534de366a451e6"
SSH = (
    "ssh -i /etc/fleet/store_key -p 2222 -o BatchMode=yes -o ConnectTimeout=10 "
    "-o UserKnownHostsFile=/etc/k -o StrictHostKeyChecking=yes"
)


def own(tmp: str) -> str:
    """The check that the temporary directory is this user's own (not a symlink)."""
    refusal = f"'{tmp} is a symlink or not this user'\"'\"'s directory: refused'"
    mine = f"[ ! -L {tmp} ] && [ -d {tmp} ] && [ -O {tmp} ]"
    return f"{{ {mine} || {{ echo {refusal} >&2; exit 1; }}; }}"


RANDOM = "Xy7Qk2mP0a"  # what mktemp -d drew
COPIES = [
    (
        "store-directory",
        ModelOrigin(source="store:nas:/srv/models/Qwen3-32B", revision="r1"),
        "/models/Qwen3-32B",
        f"{own(f'/models/.Qwen3-32B.partial.{RANDOM}')} && rsync -a --partial "
        f"-e '{SSH}' models@10.0.0.9:/srv/models/Qwen3-32B/ /models/.Qwen3-32B.partial.{RANDOM}/",
    ),
    (
        "store-gguf-file",
        ModelOrigin(source="store:nas:/srv/q.gguf", sha256="ab" * 32),
        "/models/q.gguf",
        f"{own(f'/models/.q.gguf.partial.{RANDOM}')} && rsync -a --partial "
        f"-e '{SSH}' models@10.0.0.9:/srv/q.gguf /models/.q.gguf.partial.{RANDOM}/q.gguf",
    ),
    (
        "hub-with-token",
        ModelOrigin(source=f"hf://Qwen/Qwen3-8B@{COMMIT}", token="${HF_TOKEN}"),
        "/models/Qwen3-8B",
        f"{own(f'/models/.Qwen3-8B.partial.{RANDOM}')} && "
        "IFS= read -r HF_TOKEN && export HF_TOKEN && hf download "
        f"Qwen/Qwen3-8B --revision {COMMIT} --local-dir /models/.Qwen3-8B.partial.{RANDOM}",
    ),
    (
        "hub-public-unpinned",
        ModelOrigin(source="hf://Qwen/Qwen3-8B"),
        "/srv/m/Qwen3-8B",
        f"{own(f'/srv/m/.Qwen3-8B.partial.{RANDOM}')} && "
        f"hf download Qwen/Qwen3-8B --local-dir /srv/m/.Qwen3-8B.partial.{RANDOM}",
    ),
]


@pytest.mark.parametrize(
    ("origin", "path", "expected"), [c[1:] for c in COPIES], ids=[c[0] for c in COPIES]
)
def test_copy_command(origin: ModelOrigin, path: str, expected: str) -> None:
    tmp = model_fetch.temporary_prefix(path) + RANDOM
    command = model_fetch.copy_command(origin, STORES, path, tmp)
    assert command == expected
    assert "HF_TOKEN}" not in command, "the reference is resolved on stdin, never rendered"


def test_store_listing_is_one_ssh_command_with_the_remote_find_quoted() -> None:
    origin = ModelOrigin(source="store:nas:/srv/models/My Model")
    words = shlex.split(model_fetch.source_listing(origin, STORES))
    assert words[:-1] == ["timeout", "60", *shlex.split(SSH), "--", "models@10.0.0.9"]
    assert shlex.split(words[-1]) == [
        "find",
        "/srv/models/My Model",
        "-type",
        "f",
        "-printf",
        r"%s\t%P\0",
    ]


MISMATCHES = [
    ("match", {"a": 1, "b": 2}, {"a": 1, "b": 2}, {}, {}, []),
    ("missing-file", {"a": 1, "b": 2}, {"a": 1}, {}, {}, ["b: missing"]),
    ("short-file", {"a": 10}, {"a": 4}, {}, {}, ["a: 4 bytes, expected 10"]),
    ("size-unknown", {"a": None}, {"a": 4}, {}, {}, []),
    ("nothing", {}, {}, {}, {}, ["nothing landed"]),
    ("extra-file", {"a": 1}, {"a": 1, "evil.py": 9}, {}, {}, ["evil.py: not in the source"]),
    (
        "newline-in-a-name",  # in the provenance, a line `1 - @0 config.json` of its own
        {"x\n1 - @0 config.json": 7},
        {"x\n1 - @0 config.json": 7},
        {},
        {},
        ["'x\\n1 - @0 config.json': a control character in a file name"],
    ),
    (
        "digest",
        {"": 4},
        {"": 4},
        {"": "ab" * 32},
        {"": "cd" * 32},
        ["the file: sha256 cdcdcdcdcdcd..., expected abababababab..."],
    ),
]


@pytest.mark.parametrize(
    ("expected", "landed", "digests", "got", "wrong"),
    [c[1:] for c in MISMATCHES],
    ids=[c[0] for c in MISMATCHES],
)
def test_mismatches(
    expected: dict[str, int | None],
    landed: dict[str, int],
    digests: dict[str, str],
    got: dict[str, str],
    wrong: list[str],
) -> None:
    assert model_fetch.mismatches(expected, landed, digests, got) == wrong


def test_digests_of_what_landed() -> None:
    out = f"{'ab' * 32}  config.json\n{'cd' * 32}  shards/a b.safetensors\n"
    assert model_fetch.parse_digests(out, "/models/X") == {
        "config.json": "ab" * 32,
        "shards/a b.safetensors": "cd" * 32,
    }
    tmp = f"/models/.q.gguf.partial.{RANDOM}"
    single = f"{'ef' * 32}  {tmp}/q.gguf\n"
    assert model_fetch.parse_digests(single, "/models/q.gguf") == {"": "ef" * 32}
    assert (
        model_fetch.finish_command("/models/q.gguf", tmp)
        == f"mv -T -- {tmp}/q.gguf /models/q.gguf && rmdir -- {tmp}"
    )
    escaped = f"\\{'ab' * 32}  shards/a\\nconfig.json\\\\x\n"  # GNU: `\` leads the line
    assert model_fetch.parse_digests(escaped, "/models/X") == {
        "shards/a\nconfig.json\\x": "ab" * 32
    }


OWN_KNOWN_HOSTS = {"nas": ModelStore(address="10.0.0.9", user="models")}


@pytest.mark.parametrize(
    ("accept_new", "checking"), [(False, "yes"), (True, "accept-new")], ids=["plan", "fetch"]
)
def test_a_listing_during_plan_writes_no_known_hosts_entry(accept_new: bool, checking: str) -> None:
    origin = ModelOrigin(source="store:nas:/srv/m")
    words = shlex.split(model_fetch.source_listing(origin, OWN_KNOWN_HOSTS, accept_new))
    assert [w for w in words if w.startswith("StrictHostKeyChecking")] == [
        f"StrictHostKeyChecking={checking}"
    ]


@pytest.mark.parametrize(
    ("field", "value"),
    [("user", "-oProxyCommand=touch /tmp/pwned"), ("user", "a b"), ("address", "-oProxyCommand=x")],
    ids=["user-an-option", "user-with-space", "address-an-option"],
)
def test_a_store_login_that_ssh_would_read_as_an_option_is_refused(field: str, value: str) -> None:
    with pytest.raises(ValidationError, match="should match pattern"):
        ModelStore(**{"address": "10.0.0.9", field: value})


HUB_STUB = """
class _File:
    def __init__(self, name, size):
        self.rfilename, self.size = name, size


class _Info:
    siblings = [_File("config.json", 663), _File("model.safetensors", None)]


class HfApi:
    def model_info(self, repo, revision=None, files_metadata=False):
        assert files_metadata
        print(f"asked\\t{repo}@{revision}")
        return _Info()
"""


def test_the_hub_listing_runs_hfs_python_and_prints_the_repos_files(tmp_path: Path) -> None:
    (tmp_path / "huggingface_hub.py").write_text(HUB_STUB)
    hf = tmp_path / "hf"
    hf.write_text(f"#!{sys.executable}\n")
    hf.chmod(0o755)
    origin = ModelOrigin(source=f"hf://Org/My-Model@{COMMIT}")
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin", "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        ["sh", "-c", model_fetch.hub_listing(origin)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"asked\tOrg/My-Model@{COMMIT}\n663\tconfig.json\0-1\tmodel.safetensors\0"


MADE = [
    ("nothing", "a new directory"),
    ("own-dir", "the one left"),
    ("symlink", "a new directory"),
    ("foreign-dir", "a new directory"),
    ("other-name", "a new directory"),
]


@pytest.mark.parametrize(("made", "taken"), MADE, ids=[m[0] for m in MADE])
def test_a_copy_never_writes_through_a_temporary_path_someone_else_made(
    tmp_path: Path, made: str, taken: str
) -> None:
    """The host names a directory `mktemp -d` made, or the one an interrupted fetch of
    this user left; never a symlink, another owner's directory or another name."""
    root, elsewhere = tmp_path / "models", tmp_path / "etc"
    root.mkdir()
    elsewhere.mkdir()
    left = root / f".Qwen3-8B.partial.{RANDOM}"
    if made == "own-dir":
        left.mkdir()
    if made == "symlink":
        left.symlink_to(elsewhere)
    if made == "foreign-dir":
        if os.getuid() != 0:
            pytest.skip("giving a directory to another user takes root")
        left.mkdir()
        os.chown(left, 4242, 4242)
    if made == "other-name":
        (root / ".Qwen3-8B.partial.x y").mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "hf").write_text('#!/bin/sh\nmkdir -p "$4" && touch "$4/ran"\n')
    (bin_dir / "hf").chmod(0o755)
    path = f"{root}/Qwen3-8B"
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin"}
    named = subprocess.run(
        ["sh", "-c", model_fetch.temporary_command(path)], capture_output=True, text=True, env=env
    )
    assert named.returncode == 0, named.stderr
    tmp = model_fetch.parse_temporary(path, named.stdout)
    assert tmp is not None and Path(tmp).is_dir() and not Path(tmp).is_symlink()
    assert (tmp == str(left)) is (taken == "the one left")
    assert (Path(tmp).stat().st_uid, Path(tmp).stat().st_mode & 0o777) == (os.getuid(), 0o755)
    command = model_fetch.copy_command(ModelOrigin(source="hf://Qwen/Qwen3-8B"), {}, path, tmp)
    done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert not (elsewhere / "ran").exists()
    assert (Path(tmp) / "ran").exists()


def test_two_fetches_never_share_a_new_temporary_directory(tmp_path: Path) -> None:
    path = f"{tmp_path}/Qwen3-8B"
    named = [
        subprocess.run(
            ["sh", "-c", f'{model_fetch.temporary_command(path)} && rmdir "$t"'],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for _ in range(2)
    ]
    assert len(set(named)) == 2
    assert all(model_fetch.parse_temporary(path, n) for n in named)
