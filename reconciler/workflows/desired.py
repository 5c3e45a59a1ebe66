"""Read desired/ from disk and hand its texts to the pure loader and validator.

Called by every command that starts from desired/ (validate, plan, apply, inventory).
The engines, runtimes and gateway kinds imported here register the keys of a seat file, a
host file and gateway.yaml that are their own, which the loader reads by them.
"""

from __future__ import annotations

import os
from pathlib import Path

import fleet.gateways  # noqa: F401 - registers the built-in kinds' keys of gateway.yaml
from fleet.errors import SpecError, ValidationFailed
from fleet.runtimes import validate_fleet
from fleet.spec.load import LoadedFleet, load_fleet
from fleet.spec.models import DesiredFleet
from fleet.spec.problems import Problem, has_errors

DEFAULT_DIR = "desired"


def desired_dir(option: Path | None) -> Path:
    """The desired/ directory: the option, else $FLEET_DESIRED, else ./desired."""
    return option or Path(os.environ.get("FLEET_DESIRED", DEFAULT_DIR))


def read_files(root: Path) -> dict[str, str]:
    """Every YAML file below `root`, keyed by its path relative to it."""
    if not root.is_dir():
        raise SpecError(f"desired/ directory not found: {root}")
    files: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in (".yaml", ".yml"):
            rel = path.relative_to(root).as_posix()
            try:
                files[rel] = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as err:
                raise SpecError(f"cannot read {path}: {err}") from err
    if not files:
        raise SpecError(f"no YAML files in {root}: expected fleet.yaml, hosts/ and seats/")
    return files


def load_desired(root: Path) -> tuple[LoadedFleet, list[Problem]]:
    """Load and validate desired/; the problems are sorted and include warnings."""
    loaded = load_fleet(read_files(root), prefix=root.as_posix().rstrip("/"))
    return loaded, validate_fleet(loaded)


def require_valid(root: Path) -> tuple[DesiredFleet, list[Problem]]:
    """The fleet, or ValidationFailed carrying every problem when any is an error."""
    loaded, problems = load_desired(root)
    if loaded.fleet is None or has_errors(problems):
        count = sum(1 for p in problems if p.severity == "error")
        raise ValidationFailed(f"desired/ has {count} error(s); run `fleet validate`", problems)
    return loaded.fleet, problems
