"""The fleet repository as the read-only commands use it: desired/ loaded and valid, the
inventory written from an observation, and drift against the committed inventory.

`fleet inventory` and `fleet check` need only this, not the planner (`plans.py`), whose
imports (deepdiff and what it pulls in) would double their start-up; GitPython is
imported only where the committed inventory is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fleet.errors import SpecError
from fleet.observed.bench import BenchRecord, read_record
from fleet.observed.models import Observation
from fleet.plan.live_port import follow_live_ports
from fleet.report.drift import drift_summary, read_inventory_json
from fleet.report.inventory import Inventory, build_inventory
from fleet.report.inventory_text import inventory_diff, render_json, render_markdown
from fleet.spec.models import DesiredFleet
from fleet.spec.problems import Problem


@dataclass(frozen=True)
class FleetRepo:
    """desired/ loaded and valid, and the fleet repository that holds it."""

    root: Path
    desired: DesiredFleet
    warnings: list[Problem]

    @property
    def repo_root(self) -> Path:
        """The fleet repository: the directory holding desired/."""
        return self.root.resolve().parent

    @property
    def inventory_path(self) -> Path:
        """The Markdown inventory; its JSON sits beside it."""
        return self.inside(self.repo_root / self.desired.settings.inventory.path)

    @property
    def bench_path(self) -> Path:
        """The bench record, beside the inventory."""
        return self.inside(self.inventory_path.with_name("BENCH.json"))

    def inside(self, path: Path) -> Path:
        """`path` if it stays inside the repository once symbolic links are followed (a
        pull request can commit a link as well as a path), and out of its `.git` (where a
        file is a hook or configuration git runs), else SpecError."""
        root = self.repo_root.resolve()
        resolved = path.resolve()
        if not resolved.is_relative_to(root) or resolved == root:
            raise SpecError(
                f"inventory.path: {path} leads to {resolved}, outside the fleet repository "
                f"{root}: fleet writes only inside it"
            )
        if resolved.is_relative_to(root / ".git"):
            raise SpecError(
                f"inventory.path: {path} leads to {resolved}, inside the repository's .git: "
                "fleet writes only into its work tree"
            )
        return path

    def bench_record(self) -> BenchRecord:
        """The bench results kept in the repository (none if there is no record yet)."""
        path = self.bench_path
        return read_record(path.read_text() if path.is_file() else None)

    def inventory(self, observation: Observation) -> Inventory:
        """The inventory of the observed fleet, with the repository's bench record."""
        live = follow_live_ports(self.desired, observation)  # each seat's live port
        return build_inventory(live, observation, self.bench_record())


@dataclass(frozen=True)
class Drift:
    """The live fleet against the committed inventory: a summary, and the Markdown diff."""

    summary: tuple[str, ...] = ()
    diff: tuple[str, ...] = ()
    committed: bool = False

    @property
    def found(self) -> bool:
        """True when the live fleet differs from what was committed."""
        return bool(self.summary or self.diff)


def find_drift(repo: FleetRepo, observation: Observation, *, worktree: bool = False) -> Drift:
    """Compare the committed inventory (Markdown and its JSON twin) with the live one;
    with `worktree`, an inventory written but not yet committed counts too."""
    committed = _committed_text(repo.inventory_path, worktree)
    if committed is None:
        return Drift()
    inventory = repo.inventory(observation)
    delta = inventory_diff(committed, render_markdown(inventory), context=0)
    diff = tuple(
        line.rstrip("\n") for line in delta if line[:1] in "+-" and line[:3] not in ("+++", "---")
    )
    twin = read_inventory_json(_committed_text(repo.inventory_path.with_suffix(".json"), worktree))
    summary = drift_summary(twin, inventory) if twin is not None else ()
    if diff and not summary:
        summary = ("the inventory differs in lines no seat, alias or GPU summary covers",)
    return Drift(summary=summary, diff=diff, committed=True)


def _committed_text(path: Path, worktree: bool) -> str | None:
    from reconciler.adapters.git import read_committed

    committed = read_committed(path)
    if committed is None and worktree and path.is_file():
        return path.read_text()
    return committed


def write_inventory(repo: FleetRepo, inventory: Inventory) -> list[Path]:
    """Write the Markdown and its JSON twin; the paths written."""
    markdown = repo.inventory_path
    twin = repo.inside(markdown.with_suffix(".json"))
    markdown.parent.mkdir(parents=True, exist_ok=True)
    markdown.write_text(render_markdown(inventory))
    twin.write_text(render_json(inventory))
    return [markdown, twin]
