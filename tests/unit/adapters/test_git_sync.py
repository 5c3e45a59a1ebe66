"""The loop's pull: fast-forward, never merge; only fleet's own inventory commits are
replayed onto a moved upstream. On real Git repositories in a temporary directory."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import git
import pytest

from reconciler.adapters.git import (
    changed_since,
    commit_files,
    head_commit,
    read_committed,
    sync_upstream,
)
from tests.lab.procs import stat_fields

GENERATED = ("inventory/INVENTORY.md", "inventory/INVENTORY.json")


def commit(repo: git.Repo, path: str, text: str, message: str) -> None:
    target = Path(repo.working_tree_dir or ".") / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    repo.git.add(path)
    repo.git.commit("-m", message)


@pytest.fixture
def clones(tmp_path: Path) -> Iterator[tuple[git.Repo, git.Repo]]:
    """The loop's clone and a person's, of one bare remote (closed afterwards: a Repo keeps
    the `git cat-file` processes its reads started until it is closed)."""
    git.Repo.init(tmp_path / "remote.git", bare=True)
    loop = git.Repo.init(tmp_path / "loop")
    for repo in (loop,):
        with repo.config_writer() as config:
            config.set_value("user", "name", "t").set_value("user", "email", "t@x.invalid")
    commit(loop, "desired/fleet.yaml", "name: a\n", "desired fleet")
    loop.create_remote("origin", str(tmp_path / "remote.git")).push("HEAD:refs/heads/main")
    loop.git.branch("--set-upstream-to=origin/main")
    person = git.Repo.clone_from(str(tmp_path / "remote.git"), tmp_path / "person", branch="main")
    with person.config_writer() as config:
        config.set_value("user", "name", "p").set_value("user", "email", "p@x.invalid")
    yield loop, person
    loop.close()
    person.close()


def desired(repo: git.Repo) -> Path:
    return Path(repo.working_tree_dir or ".") / "desired"


def test_fast_forward_and_the_new_revision(clones: tuple[git.Repo, git.Repo]) -> None:
    loop, person = clones
    applied = loop.head.commit.hexsha
    assert sync_upstream(desired(loop), GENERATED)[0] == "up-to-date"
    commit(person, "desired/fleet.yaml", "name: b\n", "rename")
    person.git.push("origin", "HEAD:main")
    assert sync_upstream(desired(loop), GENERATED)[0] == "fast-forwarded"
    assert changed_since(desired(loop), applied)
    commit(loop, "inventory/INVENTORY.md", "x\n", "fleet apply: 1 change(s) to a")
    assert not changed_since(desired(loop), loop.head.commit.parents[0].hexsha)


def test_fleets_own_commit_is_replayed_a_persons_is_not(clones: tuple[git.Repo, git.Repo]) -> None:
    loop, person = clones
    commit(loop, "inventory/INVENTORY.md", "x\n", "fleet apply: 1 change(s) to a")
    commit(person, "desired/fleet.yaml", "name: b\n", "rename")
    person.git.push("origin", "HEAD:main")
    state, _ = sync_upstream(desired(loop), GENERATED)
    assert state == "rebased"
    assert (desired(loop) / "fleet.yaml").read_text() == "name: b\n"
    assert loop.head.commit.message.startswith("fleet apply: ")
    commit(loop, "desired/fleet.yaml", "name: mine\n", "a local edit")
    commit(person, "desired/fleet.yaml", "name: theirs\n", "another rename")
    person.git.push("origin", "HEAD:main")
    assert sync_upstream(desired(loop), GENERATED)[0] == "diverged"
    assert (desired(loop) / "fleet.yaml").read_text() == "name: mine\n"  # nothing discarded


def git_children() -> set[tuple[int, str]]:
    """This process's live `git` children: (pid, command line)."""
    found = set()
    for entry in Path("/proc").iterdir():
        fields = stat_fields(int(entry.name)) if entry.name.isdigit() else None
        if not fields or int(fields[1]) != os.getpid() or fields[0] == "Z":
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if cmdline.startswith("git "):
            found.add((int(entry.name), cmdline.strip()))
    return found


@pytest.mark.parametrize(
    "call",
    [
        lambda loop: head_commit(desired(loop)),
        lambda loop: read_committed(desired(loop) / "fleet.yaml"),
        lambda loop: sync_upstream(desired(loop), GENERATED),
        lambda loop: changed_since(desired(loop), "HEAD~0"),
        lambda loop: commit_files([desired(loop) / "fleet.yaml"], "x", record=True),
    ],
    ids=["head_commit", "read_committed", "sync_upstream", "changed_since", "commit_files"],
)
def test_each_call_leaves_no_git_process_behind(
    clones: tuple[git.Repo, git.Repo], call: Callable[[git.Repo], object]
) -> None:
    """A `fleet reconcile` cycle makes these calls every interval: a `git cat-file` kept
    open by each would pile up until the garbage collector ran."""
    loop, _ = clones
    before = git_children()
    call(loop)
    assert git_children() - before == set()
