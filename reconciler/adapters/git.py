"""The fleet repository in Git (GitPython): which commit desired/ is at, the committed
inventory, and committing the regenerated inventory after an apply.

GitPython's errors are mapped to `GitError` here. Each function closes the repository it
opened (`_repository`): GitPython reads objects through `git cat-file` processes it keeps
for the life of a `git.Repo`, and `fleet reconcile` would otherwise leave them, and their
pipes, to the garbage collector every cycle.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import git

from fleet.errors import GitError


def open_repo(path: Path) -> git.Repo | None:
    """The Git repository containing `path`, or None if it is not in one."""
    try:
        return git.Repo(path, search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None


@contextmanager
def _repository(path: Path) -> Iterator[git.Repo | None]:
    """`open_repo`, closed again (its `git cat-file` processes ended) when done."""
    repo = open_repo(path)
    try:
        yield repo
    finally:
        if repo is not None:
            repo.close()


def head_commit(path: Path) -> str | None:
    """HEAD's sha of the repository holding `path` (with `+dirty` if desired/ has changes)."""
    with _repository(path) as repo:
        if repo is None or not repo.head.is_valid():
            return None
        sha = repo.head.commit.hexsha
        relative = _relative(repo, path)
        dirty = repo.is_dirty(path=relative) or any(
            f.startswith(relative) for f in repo.untracked_files
        )
        return f"{sha}+dirty" if dirty else sha


def read_committed(path: Path) -> str | None:
    """The text of `path` as committed at HEAD; None if not committed (or not in Git)."""
    with _repository(path.parent if not path.exists() else path) as repo:
        if repo is None or not repo.head.is_valid():
            return None
        try:
            blob = repo.head.commit.tree / _relative(repo, path)
        except KeyError:
            return None
        data: bytes = blob.data_stream.read()
        return data.decode()


def commit_files(
    paths: list[Path], message: str, *, push: bool = False, record: bool = False
) -> str | None:
    """Commit exactly these files (and nothing else staged), optionally push; the new sha
    (None when they are unchanged since the last commit: nothing committed, unless
    `record`: the message is then committed alone, as the record of what was done)."""
    with _repository(paths[0].parent) as repo:
        if repo is None:
            raise GitError(f"{paths[0]} is not inside a Git repository: nothing committed")
        relative = [_relative(repo, p) for p in paths]
        try:
            with repo.git.custom_environment(**_identity(repo)):
                repo.git.add("--", *relative)
                if not repo.git.diff("--cached", "--name-only", "HEAD", "--", *relative):
                    if not record:
                        return None  # the files say what the last commit says: nothing to commit
                    repo.git.commit("-m", message, "--allow-empty")
                else:
                    repo.git.commit("-m", message, "--only", "--", *relative)
            if push:
                _push(repo)
        except (git.GitCommandError, ValueError, OSError) as err:
            raise GitError(f"git commit of the inventory failed: {err}") from err
        return repo.head.commit.hexsha


def _push(repo: git.Repo) -> None:
    """Push HEAD to the branch's upstream (or to the same-named branch of the remote)."""
    branch = repo.active_branch
    tracking = branch.tracking_branch()
    remote = repo.remote(tracking.remote_name) if tracking else repo.remote()
    target = tracking.remote_head if tracking else branch.name
    remote.push(f"HEAD:refs/heads/{target}").raise_if_error()


def _identity(repo: git.Repo) -> dict[str, str]:
    """A committer identity when the repository has none configured."""
    reader = repo.config_reader()
    if reader.has_option("user", "name") and reader.has_option("user", "email"):
        return {}
    return {
        "GIT_AUTHOR_NAME": "fleet",
        "GIT_AUTHOR_EMAIL": "fleet@localhost",
        "GIT_COMMITTER_NAME": "fleet",
        "GIT_COMMITTER_EMAIL": "fleet@localhost",
    }


def _relative(repo: git.Repo, path: Path) -> str:
    root = Path(repo.working_tree_dir or ".").resolve()
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError as err:
        raise GitError(f"{path} is outside the repository at {root}") from err


def _only_generated(repo: git.Repo, upstream: str, generated: tuple[str, ...]) -> bool:
    """True when every local commit not upstream is fleet's own, touching only `generated`
    files (the inventory and bench record it writes), so it can be replayed, not merged."""
    local = list(repo.iter_commits(f"{upstream}..HEAD"))
    if not local or not generated:
        return False
    for commit in local:
        if not str(commit.message).startswith(("fleet apply: ", "fleet bench: ")):
            return False
        if any(str(path) not in generated for path in commit.stats.files):
            return False
    return True


def sync_upstream(path: Path, generated: tuple[str, ...] = ()) -> tuple[str, str]:
    """Fetch the branch's upstream and fast-forward to it, never merging or discarding
    local work: (state, detail) with state `up-to-date`, `fast-forwarded`, `dirty`,
    `diverged`, `ahead`, `rebased` (only fleet's own commits of the `generated` files,
    repo-relative, were local: replayed onto the upstream) or `no-upstream`."""
    with _repository(path) as repo:
        if repo is None or repo.head.is_detached:
            return "no-upstream", "not on a branch of a Git repository"
        tracking = repo.active_branch.tracking_branch()
        if tracking is None:
            return "no-upstream", f"{repo.active_branch.name} tracks no upstream"
        try:
            repo.remote(tracking.remote_name).fetch()
            head, upstream = repo.head.commit, tracking.commit
            if head == upstream:
                return "up-to-date", head.hexsha
            if repo.is_dirty(untracked_files=False):
                return "dirty", "the clone has local changes: not fast-forwarding"
            if repo.is_ancestor(head, upstream):
                repo.git.merge("--ff-only", tracking.name)
                return "fast-forwarded", f"{head.hexsha[:12]} -> {upstream.hexsha[:12]}"
            if repo.is_ancestor(upstream, head):
                return "ahead", "local commits not yet pushed"
            if _only_generated(repo, tracking.name, generated):
                repo.git.rebase(tracking.name)  # fleet's own inventory commits, onto the upstream
                return "rebased", f"fleet's own commits replayed onto {upstream.hexsha[:12]}"
            return "diverged", "the clone and its upstream diverged: not merging"
        except (git.GitCommandError, ValueError, OSError) as err:
            raise GitError(f"fetching the upstream failed: {err}") from err


def changed_since(path: Path, commit: str | None) -> bool:
    """True when desired/ (`path`) at HEAD differs from desired/ at `commit` (or `commit`
    is unknown here): a new revision to apply, not just a new inventory commit."""
    with _repository(path) as repo:
        if repo is None or not commit or not repo.head.is_valid():
            return True
        sha = commit.partition("+")[0]
        try:
            return bool(repo.git.diff("--name-only", sha, "HEAD", "--", _relative(repo, path)))
        except git.GitCommandError:
            return True
