"""A commit as the tests read it, from a repository opened and closed again.

GitPython reads a commit's message and files through `git cat-file` processes it keeps
open for the life of the `git.Repo`; a Repo the test drops is collected later, at some
other test's garbage collection, which then fails on the unclosed pipes it finds
(`ResourceWarning`, an error under this suite's warning filter)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import git


@dataclass(frozen=True)
class CommitInfo:
    """The sha, message and (when asked for) the files a commit changed."""

    hexsha: str
    message: str
    files: tuple[str, ...] = ()


def last_commit(root: Path, rev: str = "HEAD", *, files: bool = False) -> CommitInfo:
    """The commit `rev` of the repository at `root` (`files`: also the paths it changed)."""
    with git.Repo(root) as repo:
        commit = repo.commit(rev)
        changed = tuple(sorted(str(path) for path in commit.stats.files)) if files else ()
        return CommitInfo(commit.hexsha, str(commit.message), changed)
