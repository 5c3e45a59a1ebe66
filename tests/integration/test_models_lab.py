"""Models fetched host to host for real: the lab's model store (sshd and rsync, reached
from tower with the store's own key) holds a model no GPU host has.

In order, on one repository (coder on tower, its model only on the store): plan shows
the fetch with its size and tower's free space, and refuses a model larger than tower's
filesystem with both numbers; an apply whose rsync is killed midway leaves the seat's
path absent; the next apply resumes (the shard already copied is not copied again),
checks the files, writes the provenance the inventory reads, serves the seat, and plans
0 after (the rename kept every mtime); a file changed by hand (resized, or only its
mtime) is a finding; `fleet models prune` frees exactly the one old unused directory and
refuses the model coder uses, and a directory beside it named with a newline is a model of
its own (its name cannot speak for coder's). What needs no real sshd or rsync
(the hub, digests, an unreachable store) is in tests/unit/cli/test_models_cli.py.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.helpers import FleetRepo, apply, make_repo
from tests.lab import Lab
from tests.lab.store import HUGE, SMALL, ModelStore
from tests.waiting import wait_until

pytestmark = pytest.mark.lab

NAME = f"TinyLlama-from-store-{secrets.token_hex(3)}"  # unique on this machine's process list
PATH = f"/models/{NAME}"
SHARD = "model-00001-of-00002.safetensors"
ODD = f"{NAME}\n1"  # a directory whose name, printed raw, would speak for the model's


@pytest.fixture(scope="module")
def repo(
    lab: Lab, model_store: ModelStore, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[FleetRepo]:
    """coder on tower, its model declared to come from the store; the gateway routes it."""
    lab.reset()
    fleet = make_repo(tmp_path_factory.mktemp("models"), lab, seats=("coder",))
    store = (
        f"stores:\n  nas: {{address: {model_store.address}, port: 2222, user: root, "
        f"identity_file: {model_store.key}, known_hosts: {model_store.known_hosts}}}\n"
    )
    fleet.edit("fleet.yaml", "name: lab-fleet\n", "name: lab-fleet\n" + store)
    fleet.edit(
        "seats/coder.yaml",
        "model: /models/TinyLlama-1.1B-Chat-FP8",
        f"model:\n  path: {PATH}\n  source: store:nas:/models/{SMALL[0]}\n  revision: lab-1",
    )
    rendered = fleet.fleet("render", "gateway")
    assert rendered.returncode == 0, rendered.stderr
    lab.set_gateway_config(rendered.stdout)
    assert lab.restart_gateway().returncode == 0
    try:
        yield fleet
    finally:
        lab.reset()
        tower = lab.hosts["tower"].models_dir
        for left in [tower / NAME, tower / ODD, *tower.glob(f".{NAME}.partial.*")]:
            shutil.rmtree(left, ignore_errors=True)
        (tower / f"{NAME}.PROVENANCE.txt").unlink(missing_ok=True)


def tower_dir(lab: Lab, name: str) -> Path:
    return lab.hosts["tower"].models_dir / name


def partial(lab: Lab) -> Path | None:
    """The temporary directory tower's fetch of the model made (`mktemp -d`), if any."""
    found = sorted(lab.hosts["tower"].models_dir.glob(f".{NAME}.partial.*"))
    assert len(found) <= 1, found
    return found[0] if found else None


def test_plan_shows_the_fetch_and_refuses_a_model_tower_has_no_room_for(repo: FleetRepo) -> None:
    plan = repo.fleet("plan")
    assert plan.returncode == 2, plan.stdout + plan.stderr
    assert f"+ model {NAME} on tower" in plan.stdout
    assert f"50.3 MB from store nas (/models/{SMALL[0]}), " in plan.stdout
    assert " free on /models" in plan.stdout and "Blockers" not in plan.stdout, plan.stdout
    repo.edit("seats/coder.yaml", f"/models/{SMALL[0]}", f"/models/{HUGE[0]}")
    refused = repo.fleet("plan")
    assert refused.returncode == 1, refused.stdout
    assert f"{PATH}: needs 11.0 TB on tower but /models has " in refused.stdout
    assert " bytes)" in refused.stdout and "(apply refuses this plan)" in refused.stdout
    repo.edit("seats/coder.yaml", f"/models/{HUGE[0]}", f"/models/{SMALL[0]}")


def test_a_killed_copy_leaves_the_seat_path_absent(
    repo: FleetRepo, model_store: ModelStore
) -> None:
    model_store.slow(8)  # MB/s: the 48 MiB take ~6 s, long enough to stop midway
    env = {**os.environ, **repo.lab.env()}
    running = subprocess.Popen(
        [sys.executable, "-m", "reconciler", "apply", "--auto-approve", "--timeout", "120"],
        cwd=repo.root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    try:
        wait_until(
            lambda: (
                running.poll() is not None
                or (
                    (tmp := partial(repo.lab)) is not None
                    and (tmp / SHARD).exists()
                    and (tmp / SHARD).stat().st_size == SMALL[1] // 2
                )
            ),
            60,
            "the copy to start",
            interval=0.05,
        )
        assert running.poll() is None, "the copy ended before it was half done"
        killed = kill_rsync()
        out, err = running.communicate(timeout=60)
    finally:
        model_store.slow(None)
        if running.poll() is None:
            running.kill()
    assert killed, "an rsync of this model ran on tower"
    assert running.returncode == 1, out + err
    assert f"copy of {PATH} on tower failed (exit " in err and "the next apply resumes it" in err
    assert not tower_dir(repo.lab, NAME).exists(), "nothing at the seat's path"
    assert not tower_dir(repo.lab, f"{NAME}.PROVENANCE.txt").exists()
    tmp = partial(repo.lab)
    assert tmp is not None and (tmp / SHARD).stat().st_size == SMALL[1] // 2
    assert re.fullmatch(rf"\.{re.escape(NAME)}\.partial\.[A-Za-z0-9]{{10}}", tmp.name), tmp.name


def kill_rsync() -> list[int]:
    """SIGTERM the rsync processes copying this module's model (its apply started them)."""
    found = subprocess.run(["pgrep", "-f", f"{NAME}.partial"], capture_output=True, text=True)
    pids = []
    for pid in map(int, found.stdout.split()):
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        if cmdline and cmdline[0].endswith(b"rsync"):
            os.kill(pid, signal.SIGTERM)
            pids.append(pid)
    return pids


def test_the_next_apply_resumes_checks_records_and_serves(repo: FleetRepo) -> None:
    tmp = partial(repo.lab)
    assert tmp is not None, "the interrupted copy's directory is there to resume"
    inode = (tmp / SHARD).stat().st_ino
    plan = repo.fleet("plan")
    assert "(resumes: " in plan.stdout and " already copied)" in plan.stdout, plan.stdout
    out = apply(repo)
    assert f"fetched {PATH} on tower: 4 files checked, provenance written" in out
    model = tower_dir(repo.lab, NAME)
    store = repo.lab.root / "hosts" / "store" / "models" / SMALL[0]
    assert sorted((p.name, p.stat().st_size) for p in model.iterdir()) == sorted(
        (p.name, p.stat().st_size) for p in store.iterdir()
    )
    assert (model / SHARD).stat().st_ino == inode, "the shard copied before the kill stayed"
    assert partial(repo.lab) is None, "renamed to the seat's path"
    lineage = tower_dir(repo.lab, f"{NAME}.PROVENANCE.txt").read_text()
    assert f"Source: store:nas:/models/{SMALL[0]}\nRevision: lab-1\n" in lineage
    assert re.search(rf"\n{SMALL[1] // 2} - @[0-9.]+ {re.escape(SHARD)}\n", lineage), lineage
    inventory = json.loads(repo.fleet("inventory", "--json").stdout)
    seats = [s for h in inventory["hosts"] for s in h["seats"]]
    coder = next(s for s in seats if s["seat"] == "coder")
    assert (coder["state"], coder["model"]) == ("running", PATH)
    assert f"source: store:nas:/models/{SMALL[0]}" in (coder["lineage"] or "")
    again = repo.fleet("plan")
    assert again.returncode == 0, again.stdout + again.stderr


def test_a_model_changed_by_hand_is_a_finding(repo: FleetRepo) -> None:
    assert "model-changed" not in repo.fleet("plan").stdout, "the rename kept every mtime"
    config = tower_dir(repo.lab, NAME) / "config.json"
    before = config.stat().st_size
    with config.open("a") as out:
        out.write("\n")
    os.utime(tower_dir(repo.lab, NAME) / SHARD, (1_800_000_000, 1_800_000_000))  # same size
    plan = repo.fleet("plan")
    assert (
        f"warning model-changed tower:{PATH}: changed since fleet fetched it: "
        f"config.json is {before + 1} bytes, was {before}; {SHARD} was written since"
    ) in plan.stdout


def test_prune_frees_exactly_the_old_unused_directory(repo: FleetRepo) -> None:
    tower = repo.lab.hosts["tower"].models_dir
    retired = tower / f"retired-{secrets.token_hex(3)}"
    retired.mkdir()
    (retired / "weights.bin").write_bytes(b"\0" * 4096)
    for path in (retired / "weights.bin", retired):
        os.utime(path, (1_600_000_000, 1_600_000_000))  # last read in 2020
    (tower / ODD).mkdir()  # printed raw, its size and files would be coder's model's
    (tower / ODD / "config.json").write_text("{}")
    before = sorted(p.name for p in tower.iterdir())
    rows = json.loads(repo.fleet("models", "--host", "tower", "--json").stdout)["models"]
    assert {r["path"]: r["seats"] for r in rows if NAME in r["path"]} == {
        PATH: ["coder"],
        f"/models/{ODD}": [],
    }
    listed = repo.fleet("models", "--host", "tower")
    assert f"tower  /models/{retired.name}  8.2 kB  seats: unused  last read 2020-09-13" in (
        listed.stdout
    ), "du -sb: the file and its directory"
    assert f"tower  {PATH}  50.3 MB  seats: coder" in listed.stdout
    refused = repo.fleet("models", "prune", "--host", "tower", "--model", PATH, "--auto-approve")
    assert refused.returncode == 1
    assert f"refusing to prune {PATH} on tower: seat coder uses it" in refused.stderr
    pruned = repo.fleet("models", "prune", "--older-than", "365d", "--auto-approve")
    assert pruned.returncode == 0, pruned.stdout + pruned.stderr
    assert "Pruned 1 model(s), freed 8.2 kB." in pruned.stdout
    assert sorted(p.name for p in tower.iterdir()) == [n for n in before if n != retired.name]
