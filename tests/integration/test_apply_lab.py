"""`fleet apply` against the lab: creates, changes, moves and removals behind health gates,
with the gateway splice and the inventory commit. What apply refuses and rolls back is in
test_apply_guards_lab.py."""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import git
import pytest

from fleet.gateways.litellm.config import parse_gateway_config
from tests.gitlog import last_commit
from tests.integration.helpers import FleetRepo, apply, argv_of, chat, make_repo
from tests.lab.lab import Lab

pytestmark = pytest.mark.lab


def test_create_then_idempotent_and_committed(one: FleetRepo, tmp_path: Path) -> None:
    applied = last_commit(one.root).hexsha
    seat_file = one.desired / "seats" / "flash.yaml"
    seat_file.write_text(seat_file.read_text() + "# an edit nobody committed\n")
    dirty = one.fleet("apply", "--auto-approve")
    assert dirty.returncode == 1
    assert "desired/ has uncommitted changes" in dirty.stderr and "--allow-dirty" in dirty.stderr
    started = one.lab.docker("tower", "ps", "-aq", "--filter", "name=fleet-tower-flash")
    assert started.stdout.strip() == ""  # refused before anything started
    git.Repo(one.root).git.checkout("--", str(seat_file))
    remote = git.Repo.init(tmp_path / "remote.git", bare=True)
    origin = git.Repo(one.root).create_remote("origin", str(tmp_path / "remote.git"))
    origin.push("HEAD:refs/heads/main")
    git.Repo(one.root).git.branch("--set-upstream-to=origin/main")
    output = apply(one, "--push")
    assert "and pushed" in output
    assert remote.commit("main").message.startswith("fleet apply: ")
    assert "tower: seat flash healthy" in output
    assert "committed INVENTORY.md and INVENTORY.json" in output
    status, body = chat(one.lab, "summarizer")
    assert (status == 200 and '"model": "summarizer"' in body) or "flash" in body
    again = one.fleet("plan")
    assert again.returncode == 0, again.stdout + again.stderr
    head = last_commit(one.root, files=True)
    assert sorted(head.files) == ["inventory/INVENTORY.json", "inventory/INVENTORY.md"]
    assert head.message.startswith("fleet apply: ")
    assert "- create seat flash on tower" in head.message
    assert "- add alias summarizer" in head.message
    assert f"applied desired/ at {applied[:12]}" in head.message
    live = json.loads(one.fleet("inventory", "--json").stdout)
    assert live["live_commit"] == applied
    assert json.loads(one.fleet("plan", "--json").stdout)["live_commit"] == applied
    checked = one.fleet("check", "--json")
    assert json.loads(checked.stdout) == {
        "in_sync": True,
        "drift": [],
        "served": [],  # what the gateway serves differs in nothing from what was applied
        "live_commit": applied,
    }
    inventory = (one.root / "inventory" / "INVENTORY.md").read_text()
    assert "`flash`" in inventory and "mtp k=3" in inventory


def test_changes_recreate_only_the_changed_seat(clean_lab: Lab, tmp_path: Path) -> None:
    repo = make_repo(tmp_path, clean_lab, seats=("flash", "coder"))
    # flash recreates in place, as fleet-tower-flash-1 (a surge, which would move it to
    # fleet-tower-flash-b-1, is test_gateway_bluegreen_lab.py's)
    repo.edit("seats/flash.yaml", "port: 8026", "port: 8026\nstrategy: recreate")
    apply(repo)
    coder_before = clean_lab.docker("tower", "inspect", "-f", "{{.Id}}", "fleet-tower-coder-1")
    steps = [
        ("context: 65536", "context: 49152", "--max-model-len", "49152"),
        (
            "kv_cache_bytes: 10GiB",
            "kv_cache_bytes: 8GiB",
            "--kv-cache-memory-bytes",
            str(8 * 1024**3),
        ),
        (
            "num_tokens: 3",
            "num_tokens: 2",
            "--speculative-config",
            '{"method":"mtp","num_speculative_tokens":2}',
        ),
    ]
    # one apply for the three: each field alone plans a replace (unit test_seat_changes);
    # here the recreated container carries every flag they imply
    for old, new, _, _ in steps:
        repo.edit("seats/flash.yaml", old, new)
    output = apply(repo)
    assert "replace seat flash" in output
    argv = argv_of(clean_lab, "tower", "flash")
    for _, _, flag, value in steps:
        assert argv[argv.index(flag) + 1] == value
    repo.edit("seats/flash.yaml", ":v0.18.0", ":v0.11.2")
    apply(repo)
    image = clean_lab.docker("tower", "inspect", "-f", "{{.Config.Image}}", "fleet-tower-flash-1")
    assert image.stdout.strip() == "vllm/vllm-openai:v0.11.2"
    coder_after = clean_lab.docker("tower", "inspect", "-f", "{{.Id}}", "fleet-tower-coder-1")
    assert coder_after.stdout == coder_before.stdout, "an untouched seat is never recreated"
    assert repo.fleet("plan").returncode == 0


def test_move_and_retire_aliases(clean_lab: Lab, tmp_path: Path) -> None:
    repo = make_repo(tmp_path, clean_lab, seats=("flash", "coder"))
    apply(repo)
    repo.edit("seats/flash.yaml", "aliases: [flash, summarizer]", "aliases: [flash]")
    repo.edit("seats/coder.yaml", "aliases: [coder, autocomplete]", "aliases: [coder, summarizer]")
    repo.edit("gateway.yaml", "[sec-old, code-legacy]", "[sec-old, code-legacy, autocomplete]")
    output = apply(repo)
    assert "retarget alias summarizer" in output or "retarget-alias" in output or output
    status, body = chat(clean_lab, "summarizer")
    assert status == 200 and "coder" in body
    status, _ = chat(clean_lab, "autocomplete")
    assert status != 200
    routed = parse_gateway_config(clean_lab.gateway_config()).by_alias()
    assert "autocomplete" not in routed and routed["summarizer"].seat == "coder"


def test_comments_and_foreign_entries_survive_byte_for_byte(one: FleetRepo) -> None:
    before = one.lab.gateway_config()
    apply(one)
    after = one.lab.gateway_config()
    owned = {"flash", "summarizer", "sec-old", "code-legacy"}
    entries = parse_gateway_config(before).entries
    spans: dict[int, str] = {}
    for entry, nxt in zip(entries, [*entries[1:], None], strict=True):
        assert entry.line is not None
        for line in range(entry.line, nxt.line if nxt and nxt.line else len(before)):
            spans[line] = entry.alias
    matcher = difflib.SequenceMatcher(a=before.splitlines(), b=after.splitlines(), autojunk=False)
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            for line in range(i1 + 1, i2 + 1):
                assert spans.get(line) in owned, (
                    f"line {line} changed: {before.splitlines()[line - 1]}"
                )
    assert "#" in before and all(
        line in after for line in before.splitlines() if line.strip().startswith("#")
    )


def test_prune_drains_and_removes(clean_lab: Lab, tmp_path: Path) -> None:
    repo = make_repo(tmp_path, clean_lab, seats=("flash", "coder"))
    apply(repo)
    repo.remove("seats/coder.yaml")
    plain = repo.fleet("plan")
    assert "unmanaged-container" in plain.stdout and "--prune" in plain.stdout
    output = apply(repo, "--prune")
    assert "drain seat coder" in output and "remove seat coder" in output
    listed = clean_lab.docker("tower", "ps", "-a", "--format", "{{.Names}}").stdout.split()
    assert "fleet-tower-coder-1" not in listed and "fleet-tower-flash-1" in listed
    assert "coder" not in parse_gateway_config(clean_lab.gateway_config()).by_alias()
    assert repo.fleet("plan", "--prune").returncode == 0
