"""The order the suite's tests are handed out in: the longest lab modules first.

`scripts/test.sh` runs the suite on xdist workers with `--dist loadfile` and keeps the
collection order (`--no-loadscope-reorder`), so a long lab module collected last would run
alone at the end while the other workers idle. The lab modules are therefore sorted by
how long each took when last run (`tests/durations.json`: seconds of setup, call and
teardown of all its tests), longest first, then every other lab module in collection
order, then the rest.

Nobody edits the file by hand: a run of whole modules (the xdist controller, or a
single process; not `-k` or `file::test`) adds up the durations of each lab module whose
every test passed, and writes the file when a module is new or moved by more than a
quarter (so a run on a busy machine does not rewrite it for a few seconds). Commit it
with the change that made a module longer or shorter.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

DURATIONS = Path(__file__).resolve().parent / "durations.json"
LAB = ("fleet-lab-module", True)
MOVED = 0.25  # a module's time is rewritten when it moved by more than this fraction


def recorded(path: Path = DURATIONS) -> dict[str, float]:
    """Seconds per lab module, as last recorded (empty when there is no file)."""
    try:
        return {str(k): float(v) for k, v in json.loads(path.read_text()).items()}
    except (OSError, ValueError):
        return {}


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def order(items: list[pytest.Item], seconds: dict[str, float]) -> None:
    """Sort `items` in place: lab modules by recorded seconds (longest first), the other
    lab modules, then the rest, each group in collection order. A lab test's reports carry
    the property `LAB` (xdist hands them to its controller; a keyword would not do: the
    unit tests of the lab's own code sit under tests/unit/lab)."""
    for item in items:
        if item.get_closest_marker("lab") is not None:
            item.user_properties.append(LAB)

    def rank(item: pytest.Item) -> tuple[int, float]:
        if item.get_closest_marker("lab") is None:
            return (2, 0.0)
        known = seconds.get(module_of(item.nodeid))
        return (0, -known) if known is not None else (1, 0.0)

    items.sort(key=rank)


class Recorder:
    """Adds up each lab module's test time over a session; writes the file at its end.

    It reads the test reports alone (the xdist controller collects no items: its workers
    do), and is made only for a run of whole modules (no `-k`, no `file::test`)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.failed: set[str] = set()

    @staticmethod
    def wanted(config: pytest.Config) -> bool:
        """Whether this process should record: it sees every report (not an xdist worker)
        and the run takes whole modules."""
        whole = not config.option.keyword and not any("::" in a for a in config.args)
        return whole and not hasattr(config, "workerinput")

    def add(self, report: pytest.TestReport) -> None:
        if LAB not in report.user_properties:
            return
        module = module_of(report.nodeid)
        self.seconds[module] += report.duration
        if report.failed or report.skipped:
            self.failed.add(module)

    def finished(self) -> dict[str, float]:
        """Seconds of each lab module whose every test ran and passed."""
        return {m: round(s) for m, s in self.seconds.items() if m not in self.failed}

    def write(self, path: Path = DURATIONS) -> None:
        old = recorded(path)
        new = dict(old)
        for module, seconds in self.finished().items():
            was = old.get(module)
            if was is None or abs(seconds - was) > MOVED * was:
                new[module] = seconds
        if new != old:
            ranked = sorted(((m, round(v)) for m, v in new.items()), key=lambda kv: (-kv[1], kv[0]))
            path.write_text(json.dumps(dict(ranked), indent=2) + "\n")
