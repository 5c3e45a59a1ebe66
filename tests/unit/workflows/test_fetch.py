"""One model fetch on a fake host: progress while the copy runs, and the copy's bound."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from fleet.errors import ApplyError
from fleet.facts.provenance import RecordedFile, parse_provenance, recorded_files
from fleet.spec.load import load_fleet
from fleet.spec.model_origin import ModelOrigin
from fleet.spec.models import DesiredFleet
from reconciler.host import CommandResult
from reconciler.workflows.fetch import FetchOptions, fetch_model
from tests.fakes.clock import FakeClock
from tests.fakes.host import FakeHost
from tests.fakes.models import MODIFIED, FakeStore, copy, fake_digest

DESIRED = Path(__file__).resolve().parents[3] / "desired"
PATH = "/models/TinyLlama-1.1B-Chat-FP8"
FILES = {"config.json": 663, "model.safetensors": 2_000_000_000}


class Steps:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def step(self, message: str) -> None:
        self.lines.append(message)

    def waiting(self, reason: str, seconds: float) -> None:
        self.lines.append(f"waiting {reason}")


def desired() -> DesiredFleet:
    files = {p.relative_to(DESIRED).as_posix(): p.read_text() for p in DESIRED.rglob("*.yaml")}
    files["fleet.yaml"] += "stores:\n  nas: {address: 10.0.0.9}\n"
    files["seats/coder.yaml"] = files["seats/coder.yaml"].replace(
        f"model: {PATH}", f"model:\n  path: {PATH}\n  source: store:nas:/srv/T\n  revision: r1"
    )
    loaded = load_fleet(files)
    assert loaded.fleet is not None, loaded.problems
    return loaded.fleet


def slow_host(seconds: float) -> FakeHost:
    """tower, whose copies take `seconds` and land half the weights before the end."""
    host = FakeHost("tower")
    host.stores["10.0.0.9"] = FakeStore("10.0.0.9", models={"/srv/T": dict(FILES)})

    def slow_copy(command: str) -> CommandResult:
        (tmp,) = host.partial  # the directory the host named for this copy
        host.partial[tmp] = {"config.json": 663}
        time.sleep(seconds)
        inner = command.split(" sh -c ", 1)[1]
        return copy(host, inner.strip("'"), None)

    host.commands["timeout 3600 sh -c"] = slow_copy
    return host


def test_progress_is_reported_while_the_copy_runs() -> None:
    fleet, host, steps = desired(), slow_host(0.3), Steps()
    clock = FakeClock()
    options = FetchOptions(timeout=3600, progress_every=0.05, clock=clock)
    origin = fleet.seats["coder"].model_origin
    assert origin is not None
    fetch_model(host, fleet, "tower", PATH, origin, options, steps)
    progress = [line for line in steps.lines if " of 2.0 GB (" in line]
    assert progress, steps.lines
    assert progress[0].startswith(f"{PATH} on tower: 663 B of 2.0 GB (0%), ")
    assert steps.lines[-1] == f"fetched {PATH} on tower: 2 files checked, provenance written"
    assert host.models[PATH] == FILES


def test_a_copy_past_its_bound_is_stopped_and_resumable() -> None:
    fleet, host = desired(), FakeHost("tower")
    host.stores["10.0.0.9"] = FakeStore("10.0.0.9", models={"/srv/T": dict(FILES)})
    host.commands["timeout 60 sh -c"] = lambda _: CommandResult(124, "", "")
    options = FetchOptions(timeout=60, progress_every=1, clock=FakeClock())
    origin = fleet.seats["coder"].model_origin
    assert origin is not None
    with pytest.raises(ApplyError, match="did not finish within 60s; the next apply resumes it"):
        fetch_model(host, fleet, "tower", PATH, origin, options, Steps())
    assert PATH not in host.models


def test_a_gguf_file_is_copied_checked_by_its_digest_and_renamed() -> None:
    fleet, host = desired(), FakeHost("tower")
    size = 4_683_074_208
    host.stores["10.0.0.9"] = FakeStore("10.0.0.9", models={"/srv/q4.gguf": {"": size}})
    good = ModelOrigin(source="store:nas:/srv/q4.gguf", sha256=fake_digest("", size))
    options = FetchOptions(progress_every=1, clock=FakeClock())
    bad = good.model_copy(update={"sha256": "f" * 64})
    with pytest.raises(ApplyError, match=r"/models/q4.gguf on tower does not match its source: "):
        fetch_model(host, fleet, "tower", "/models/q4.gguf", bad, options, Steps())
    assert "/models/q4.gguf" not in host.models and host.partial, "kept for the next apply"
    fetch_model(host, fleet, "tower", "/models/q4.gguf", good, options, Steps())
    assert host.models["/models/q4.gguf"] == {"": size}
    lineage = host.files["/models/q4.gguf.PROVENANCE.txt"]
    assert lineage.endswith(
        f"\nFiles: 1\nSize: {size}\n# files: size, sha256 (or -), @mtime, path\n"
        f"{size} {fake_digest('', size)} @{MODIFIED}\n"
    ), "a single file: no trailing path"
    recorded = recorded_files(parse_provenance(lineage))
    digest = fake_digest("", size)
    assert recorded == {"": RecordedFile(size=size, sha256=digest, mtime=MODIFIED)}
