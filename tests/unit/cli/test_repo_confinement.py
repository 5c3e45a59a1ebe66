"""fleet writes only inside the fleet repository: a pull request can commit a symbolic
link as well as a path, and `inventory --write` (as apply and `bench --write`) must not
follow it out of the repository."""

from __future__ import annotations

from pathlib import Path

from tests.unit.cli.fake_fleet import make_fleet


def test_an_inventory_link_out_of_the_repository_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "home"
    outside.mkdir()
    fake = make_fleet(tmp_path)
    (fake.root / "inventory").symlink_to(outside, target_is_directory=True)
    fake.commit("inventory/ is a link")
    result = fake.fleet("inventory", "--write")
    assert result.returncode == 1, result.stdout
    assert "outside the fleet repository" in result.stderr
    assert "Traceback" not in result.stderr
    assert list(outside.iterdir()) == []


def test_the_inventory_inside_the_repository_is_written(tmp_path: Path) -> None:
    fake = make_fleet(tmp_path)
    assert fake.fleet("inventory", "--write").returncode == 0
    assert (fake.root / "inventory" / "INVENTORY.md").is_file()


def test_an_inventory_link_into_git_is_refused(tmp_path: Path) -> None:
    """A link to .git/hooks would make the inventory a hook the next commit runs."""
    fake = make_fleet(tmp_path)
    hooks = fake.root / ".git" / "hooks"
    hooks.mkdir(parents=True, exist_ok=True)
    before = sorted(p.name for p in hooks.iterdir())
    (fake.root / "inventory").symlink_to(hooks, target_is_directory=True)
    fake.commit("inventory/ is a link into .git")
    result = fake.fleet("inventory", "--write")
    assert result.returncode == 1, result.stdout
    assert "inside the repository's .git" in result.stderr
    assert sorted(p.name for p in hooks.iterdir()) == before
