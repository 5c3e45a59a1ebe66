"""Models as part of the spec, on fake hosts: a seat's model only on a store is planned
with its fetch and the free space, fetched in wave 0 (copied on the host, checked,
provenance written, renamed), and plans 0 after; no room, an unreachable store and a
file changed by hand are said with their numbers; an interrupted copy leaves the seat's
path absent and the next apply resumes it; hf:// gets its token on stdin only; `fleet
models` lists and prunes exactly the unused model (and an abandoned `.partial`, not one a
fetch resumes), hashes at observe only files written since the fetch, `--verify` hashes
every recorded file, and `--json` gives hosts, models and findings. tests/fakes/models.py plays the
weights, the store and the hub; tests/integration/test_models_lab.py copies for real.
"""

from __future__ import annotations

import io
import json
import shlex
from pathlib import Path

import pytest

from fleet.facts.provenance import parse_provenance, recorded_files
from fleet.render.model_fetch import is_temporary_of, temporary_prefix
from reconciler.host import CommandResult
from tests.fakes.models import ACCESSED, FakeStore, fake_digest, temporary
from tests.unit.cli.fake_fleet import MASTER_KEY, FakeFleet, make_fleet

PATH = "/models/TinyLlama-1.1B-Chat-FP8"
SOURCE = "/srv/models/TinyLlama-1.1B-Chat-FP8"
FILES = {"config.json": 663, "model.safetensors": 1_100_000_000, "tokenizer.json": 1_800_000}
STORE = "stores:\n  nas: {address: 10.0.0.9, user: models, identity_file: /etc/fleet/nas}\n"
COMMIT = "fe8a4ea1ffedaf415f4da2f062534de366a451e6"
TMP = temporary_prefix(PATH)  # `/models/.TinyLlama-1.1B-Chat-FP8.partial.` and mktemp's part


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeFleet:
    """coder on tower, its model only on store nas; the gateway already routes coder."""
    for name, value in MASTER_KEY.items():
        monkeypatch.setenv(name, value)
    fleet = make_fleet(tmp_path, seats=("coder",))
    fleet.edit("fleet.yaml", "name: lab-fleet\n", "name: lab-fleet\n" + STORE)
    fleet.edit(
        "seats/coder.yaml",
        f"model: {PATH}",
        f"model:\n  path: {PATH}\n  source: store:nas:{SOURCE}\n  revision: r2026-11",
    )
    tower = fleet.hosts["tower"]
    tower.missing.add(PATH)
    tower.stores["10.0.0.9"] = FakeStore("10.0.0.9", models={SOURCE: dict(FILES)})
    fleet.route_gateway()
    return fleet


def apply(fake: FakeFleet) -> str:
    result = fake.fleet("apply", "--auto-approve", "--timeout", "120")
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_fetch_is_planned_applied_checked_and_then_in_sync(fake: FakeFleet) -> None:
    plan = fake.fleet("plan")
    assert plan.returncode == 2, plan.stdout + plan.stderr
    assert "Plan: 1 model to fetch, 1 to create" in plan.stdout
    assert "Wave 0: models\n  + model TinyLlama-1.1B-Chat-FP8 on tower\n" in plan.stdout
    assert f"1.1 GB from store nas ({SOURCE}), 2.0 TB free on /models" in plan.stdout
    assert "does not exist on tower" not in plan.stdout, "a fetch is due, not a blocker"
    out = apply(fake)
    tower = fake.hosts["tower"]
    assert f"fetched {PATH} on tower: 3 files checked, provenance written" in out
    assert tower.models[PATH] == FILES and not tower.partial
    assert sorted(tower.copied) == sorted(FILES)
    rsync = next(c for _, c in tower.journal if "rsync" in c)
    assert f"models@10.0.0.9:{SOURCE}/ {TMP}" in rsync
    assert "ssh -i /etc/fleet/nas" in rsync, "the host's own key to the store"
    lineage = parse_provenance(tower.files[PATH + ".PROVENANCE.txt"])
    assert lineage.get("source") == f"store:nas:{SOURCE}"
    assert lineage.get("revision") == "r2026-11" and lineage.get("files") == "3"
    assert (lineage.get("fetched by") or "").startswith("fleet apply by ")
    assert {k: v.size for k, v in (recorded_files(lineage) or {}).items()} == FILES
    assert tower.started == ["coder"], "the seat starts after its model is there"
    again = fake.fleet("plan")
    assert again.returncode == 0, again.stdout


def test_no_room_is_a_blocker_with_the_numbers(fake: FakeFleet) -> None:
    fake.hosts["tower"].disk_free = 500_000_000
    plan = fake.fleet("plan")
    assert (
        f"{PATH}: needs 1.1 GB on tower but /models has 500 MB free (1101800663 > 500000000 bytes)"
    ) in plan.stdout
    refused = fake.fleet("apply", "--auto-approve")
    assert refused.returncode == 1 and "blocker" in refused.stderr
    assert fake.hosts["tower"].copied == []


def test_unreachable_store_is_a_blocker(fake: FakeFleet) -> None:
    fake.hosts["tower"].stores["10.0.0.9"].reachable = False
    plan = fake.fleet("plan")
    assert (
        f"source store:nas:{SOURCE} is unreachable from tower: "
        "ssh: connect to host 10.0.0.9 port 22: Connection refused"
    ) in plan.stdout


def test_a_copy_past_its_bound_is_stopped(fake: FakeFleet) -> None:
    tower = fake.hosts["tower"]
    tower.commands["timeout 5 sh -c"] = lambda _: CommandResult(124, "", "")
    failed = fake.fleet("apply", "--auto-approve", "--fetch-timeout", "5")
    assert failed.returncode == 1
    assert f"copy of {PATH} on tower did not finish within 5s; the next apply resumes it" in (
        failed.stderr
    )
    assert PATH not in tower.models and tower.started == []


def test_interrupted_copy_leaves_no_model_and_the_next_apply_resumes(fake: FakeFleet) -> None:
    tower = fake.hosts["tower"]
    tower.copy_limit = 1
    failed = fake.fleet("apply", "--auto-approve")
    assert failed.returncode == 1
    assert "copy of /models/TinyLlama-1.1B-Chat-FP8 on tower failed (exit 20)" in failed.stderr
    assert "the next apply resumes it" in failed.stderr
    assert PATH not in tower.models and PATH + ".PROVENANCE.txt" not in tower.files
    assert tower.started == [], "no seat started on half a model"
    assert list(tower.partial.values()) == [{"config.json": 663}]
    assert all(is_temporary_of(tmp, PATH) for tmp in tower.partial)
    plan = fake.fleet("plan")
    assert "(resumes: 663 B already copied)" in plan.stdout
    apply(fake)
    assert tower.copied == ["config.json", "model.safetensors", "tokenizer.json"], "once each"
    assert tower.models[PATH] == FILES and tower.started == ["coder"]


def test_a_model_changed_by_hand_is_a_finding(fake: FakeFleet) -> None:
    apply(fake)
    tower = fake.hosts["tower"]
    tower.models[PATH]["config.json"] = 700
    tower.models[PATH]["notes.txt"] = 12
    plan = fake.fleet("plan")
    assert (
        f"warning model-changed tower:{PATH}: changed since fleet fetched it: "
        "config.json is 700 bytes, was 663; notes.txt was added"
    ) in plan.stdout


def test_hf_source_gets_its_token_on_stdin_and_checks_digests(
    fake: FakeFleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_notarealtokenbutlongenough123")
    digest = fake_digest("model.safetensors", 4096)
    fake.edit(
        "seats/coder.yaml",
        f"  source: store:nas:{SOURCE}\n  revision: r2026-11",
        f"  source: hf://TinyLlama/TinyLlama-1.1B-Chat-v1.0@{COMMIT}\n  token: ${{HF_TOKEN}}\n"
        f"  manifest:\n    config.json: {{size: 663}}\n"
        f"    model.safetensors: {{size: 4096, sha256: {digest}}}",
    )
    tower = fake.hosts["tower"]
    tower.hub["TinyLlama/TinyLlama-1.1B-Chat-v1.0"] = {
        "config.json": 663,
        "model.safetensors": 4096,
    }
    plan = fake.fleet("plan")
    assert f"4.8 kB from the hub (TinyLlama/TinyLlama-1.1B-Chat-v1.0@{COMMIT})" in plan.stdout
    apply(fake)
    download = next(c for _, c in tower.journal if "hf download" in c)
    assert (
        f"hf download TinyLlama/TinyLlama-1.1B-Chat-v1.0 --revision {COMMIT} --local-dir {TMP}"
    ) in download
    assert "hf_notarealtoken" not in download and tower.tokens == [
        "hf_notarealtokenbutlongenough123\n"
    ]
    recorded = recorded_files(parse_provenance(tower.files[PATH + ".PROVENANCE.txt"])) or {}
    assert recorded["model.safetensors"].sha256 == digest


def test_hf_digest_mismatch_refuses_the_model(fake: FakeFleet) -> None:
    fake.edit(
        "seats/coder.yaml",
        f"  source: store:nas:{SOURCE}\n  revision: r2026-11",
        f"  source: hf://TinyLlama/T@{COMMIT}\n  manifest:\n"
        f"    model.safetensors: {{sha256: {'f' * 64}}}",
    )
    fake.hosts["tower"].hub["TinyLlama/T"] = {"model.safetensors": 4096}
    failed = fake.fleet("apply", "--auto-approve")
    assert failed.returncode == 1
    assert f"{PATH} on tower does not match its source: model.safetensors: sha256" in failed.stderr
    assert PATH not in fake.hosts["tower"].models


def test_models_lists_and_prune_frees_exactly_the_unused_one(
    fake: FakeFleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    apply(fake)
    tower = fake.hosts["tower"]
    tower.models["/models/Qwen3-32B-retired"] = {
        "config.json": 700,
        "model.safetensors": 65_500_000_000,
    }
    listed = fake.fleet("models")
    assert listed.returncode == 0, listed.stderr
    assert f"tower  {PATH}  1.1 GB  seats: coder  last read 2026-09-21" in listed.stdout
    assert "tower  /models/Qwen3-32B-retired  65.5 GB  seats: unused" in listed.stdout
    assert "info unused-model tower:/models/Qwen3-32B-retired" in fake.fleet("plan").stdout
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    asks = fake.fleet("models", "prune")
    assert asks.returncode == 1 and "pass --auto-approve" in asks.stderr
    assert "Prune would remove 1 model(s), freeing 65.5 GB." in asks.stdout
    used = fake.fleet("models", "prune", "--host", "tower", "--model", PATH, "--auto-approve")
    assert used.returncode == 1
    assert f"refusing to prune {PATH} on tower: seat coder uses it" in used.stderr
    outside = fake.fleet("models", "prune", "--host", "tower", "--model", "/etc", "--auto-approve")
    assert "not an entry of its models root /models" in outside.stderr
    young = fake.fleet("models", "prune", "--older-than", "100000d", "--auto-approve")
    assert "Nothing to prune" in young.stdout
    pruned = fake.fleet("models", "prune", "--auto-approve")
    assert pruned.returncode == 0, pruned.stderr
    assert "Pruned 1 model(s), freed 65.5 GB." in pruned.stdout
    assert sorted(tower.models) == [PATH]
    assert [p for kind, p in tower.journal if kind == "removed"] == ["/models/Qwen3-32B-retired"]


def test_fetches_to_one_host_are_counted_together(tmp_path: Path) -> None:
    two = make_fleet(tmp_path, seats=("coder", "embed"))
    two.edit("fleet.yaml", "name: lab-fleet\n", "name: lab-fleet\n" + STORE)
    for seat, path in (("coder", PATH), ("embed", "/models/stories42M-embed")):
        two.edit(
            f"seats/{seat}.yaml",
            f"model: {path}",
            f"model:\n  path: {path}\n  source: store:nas:{SOURCE}\n  revision: r1",
        )
    tower = two.hosts["tower"]
    tower.missing |= {PATH, "/models/stories42M-embed"}
    tower.stores["10.0.0.9"] = FakeStore("10.0.0.9", models={SOURCE: dict(FILES)})
    tower.disk_free = 1_500_000_000  # room for one copy, not two
    plan = two.fleet("plan")
    assert "Plan: 2 models to fetch, 2 to create" in plan.stdout
    assert f"{PATH}: needs" not in plan.stdout, "the first fits"
    assert (
        "/models/stories42M-embed: needs 1.1 GB on tower (1.1 GB more for the fetches before "
        "it) but /models has 1.5 GB free (2203601326 > 1500000000 bytes)"
    ) in plan.stdout


WEIGHTS = "model.safetensors"
LATER = "1791000000.0000000000"  # an mtime after the fetch's


def declare_digest(fake: FakeFleet) -> None:
    """coder's origin declares the weights' sha256 (a manifest), so fleet records it."""
    fake.edit(
        "seats/coder.yaml",
        "  revision: r2026-11",
        f"  revision: r2026-11\n  manifest:\n"
        f"    {WEIGHTS}: {{sha256: {fake_digest(WEIGHTS, FILES[WEIGHTS])}}}",
    )


def hashed(fake: FakeFleet) -> list[str]:
    return [c for _, c in fake.hosts["tower"].journal if "sha256sum" in c]


# (id, file, written since (new mtime), its bytes changed, what `fleet models` says or None)
EDITS = [
    ("touched-same-bytes", WEIGHTS, True, False, None),
    ("rewritten-same-size", WEIGHTS, True, True, f"{WEIGHTS}: sha256 "),
    ("undigested-rewritten", "tokenizer.json", True, False, "tokenizer.json was written since"),
    ("corrupt-same-mtime", WEIGHTS, False, True, None),  # only --verify reads every byte
]


@pytest.mark.parametrize(
    ("name", "written", "corrupt", "said"), [e[1:] for e in EDITS], ids=[e[0] for e in EDITS]
)
def test_observe_hashes_only_files_written_since_the_fetch(
    fake: FakeFleet, name: str, written: bool, corrupt: bool, said: str | None
) -> None:
    declare_digest(fake)
    apply(fake)
    tower = fake.hosts["tower"]
    tower.journal.clear()
    assert "model-changed" not in fake.fleet("models").stdout and not hashed(fake)
    if written:
        tower.modified[(PATH, name)] = LATER
    if corrupt:
        tower.corrupt.add((PATH, name))
    listed = fake.fleet("models")
    assert listed.returncode == 0, listed.stderr
    digested = name == WEIGHTS and written
    assert hashed(fake) == ([f"cd {PATH} && sha256sum -- {WEIGHTS}"] if digested else [])
    if said is None:
        assert "model-changed" not in listed.stdout
    else:
        assert f"model-changed: tower:{PATH}: changed since fleet fetched it: {said}" in (
            listed.stdout
        )
        assert f"warning model-changed tower:{PATH}" in fake.fleet("plan").stdout


@pytest.mark.parametrize("corrupt", [False, True], ids=["intact", "corrupt"])
def test_verify_hashes_every_recorded_file(fake: FakeFleet, corrupt: bool) -> None:
    declare_digest(fake)
    apply(fake)
    tower = fake.hosts["tower"]
    if corrupt:
        tower.corrupt.add((PATH, WEIGHTS))  # same size, same mtime: only its bytes differ
    verified = fake.fleet("models", "--verify")
    assert verified.returncode == (2 if corrupt else 0), verified.stdout + verified.stderr
    assert (f"model-changed: tower:{PATH}" in verified.stdout) is corrupt
    assert hashed(fake)[-1] == f"cd {PATH} && sha256sum -- {WEIGHTS}"


def test_prune_frees_an_abandoned_partial_and_keeps_one_a_fetch_resumes(fake: FakeFleet) -> None:
    tower = fake.hosts["tower"]
    abandoned, resumed = temporary("/models/Qwen3-32B-old"), temporary(PATH)
    tower.partial[abandoned] = {"model-00001.safetensors": 5_000_000_000}
    tower.partial[resumed] = {"config.json": 663}  # coder's fetch would resume it
    aged = fake.fleet("models", "prune", "--older-than", "1d", "--auto-approve")
    assert "Nothing to prune" in aged.stdout, "a partial's last read is unknown"
    pruned = fake.fleet("models", "prune", "--auto-approve")
    assert pruned.returncode == 0, pruned.stdout + pruned.stderr
    assert f"  - tower  {abandoned}  5.0 GB  seats: unused" in pruned.stdout
    assert resumed not in pruned.stdout
    assert "Pruned 1 model(s), freed 5.0 GB." in pruned.stdout
    assert sorted(tower.partial) == [resumed]
    assert [p for kind, p in tower.journal if kind == "removed"] == [abandoned]


def test_models_json_has_hosts_models_and_findings(fake: FakeFleet) -> None:
    apply(fake)
    tower = fake.hosts["tower"]
    tower.models["/models/Qwen3-32B-retired"] = {"config.json": 700}
    tower.modified[(PATH, "tokenizer.json")] = LATER
    listed = fake.fleet("models", "--json")
    assert listed.returncode == 0, listed.stderr
    document = json.loads(listed.stdout)
    assert sorted(document["hosts"]) == sorted(fake.hosts)
    assert document["hosts"]["tower"] == {"reachable": True, "disk_available": tower.disk_free}
    rows = {row["path"]: row for row in document["models"]}
    assert rows[PATH] == {
        "host": "tower",
        "path": PATH,
        "size_bytes": sum(FILES.values()),
        "seats": ["coder"],
        "lineage": rows[PATH]["lineage"],
        "last_used": ACCESSED,
    }
    assert f"source: store:nas:{SOURCE}" in rows[PATH]["lineage"]
    assert rows["/models/Qwen3-32B-retired"]["seats"] == []
    kinds = {(f["kind"], f["target"], f["severity"]) for f in document["findings"]}
    assert kinds == {
        ("unused-model", "tower:/models/Qwen3-32B-retired", "info"),
        ("model-changed", f"tower:{PATH}", "warning"),
    }


def test_prune_never_offers_a_partial_a_seat_uses_or_not_named_as_one(fake: FakeFleet) -> None:
    apply(fake)
    tower = fake.hosts["tower"]
    tower.partial[PATH] = {"config.json": 663}  # the host reports coder's model as a partial
    tower.partial["/models/.old.partial"] = {"model.safetensors": 2_000_000_000}
    pruned = fake.fleet("models", "prune", "--auto-approve")
    assert pruned.returncode == 0, pruned.stdout + pruned.stderr
    assert [p for kind, p in tower.journal if kind == "removed"] == ["/models/.old.partial"]
    assert PATH in tower.models


def test_a_model_directory_named_with_a_newline_is_a_model_of_its_own(fake: FakeFleet) -> None:
    """Printed raw, `<coder's model>\\n1` would have given coder's model its size and
    files; it is one unused directory, which prune removes, and nothing else."""
    apply(fake)
    tower = fake.hosts["tower"]
    odd = f"{PATH}\n1"
    tower.models[odd] = {"config.json": 1, "evil\n5\t0\t0\tconfig.json": 2}
    listed = json.loads(fake.fleet("models", "--json").stdout)
    rows = {row["path"]: row for row in listed["models"]}
    assert sorted(rows) == [PATH, odd]
    assert (rows[PATH]["size_bytes"], rows[PATH]["seats"]) == (sum(FILES.values()), ["coder"])
    assert (rows[odd]["size_bytes"], rows[odd]["seats"]) == (3, [])
    shown = fake.fleet("models").stdout
    assert f"tower  {PATH}\\n1  3 B  seats: unused" in shown and f"{PATH}\n1" not in shown
    assert "model-changed" not in fake.fleet("plan").stdout
    pruned = fake.fleet("models", "prune", "--auto-approve")
    assert pruned.returncode == 0, pruned.stdout + pruned.stderr
    assert [p for kind, p in tower.journal if kind == "removed"] == [odd]
    assert tower.models[PATH] == FILES


def test_a_file_planted_in_the_temporary_path_fails_the_fetch(fake: FakeFleet) -> None:
    tower = fake.hosts["tower"]
    tower.partial[temporary(PATH)] = {"modeling_evil.py": 10}
    result = fake.fleet("apply", "--auto-approve", "--timeout", "120")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "modeling_evil.py: not in the source" in result.stdout + result.stderr
    assert PATH not in tower.models


@pytest.mark.parametrize("planted", [False, True], ids=["as-listed", "planted-file"])
def test_hf_without_a_manifest_is_checked_against_the_hubs_file_list(
    fake: FakeFleet, planted: bool
) -> None:
    fake.edit(
        "seats/coder.yaml",
        f"  source: store:nas:{SOURCE}\n  revision: r2026-11",
        f"  source: hf://TinyLlama/T@{COMMIT}",
    )
    tower = fake.hosts["tower"]
    tower.hub["TinyLlama/T"] = {"config.json": 663, "model.safetensors": 4096}
    if planted:
        tower.partial[temporary(PATH)] = {"modeling_evil.py": 10}
    result = fake.fleet("apply", "--auto-approve", "--timeout", "120")
    listing = next(c for _, c in tower.journal if c.startswith("hub_python="))
    assert shlex.split(listing.split(" $hub_python ", 1)[1])[2:] == ["TinyLlama/T", COMMIT]
    if planted:
        assert result.returncode == 1
        assert "modeling_evil.py: not in the source" in result.stderr
        assert PATH not in tower.models
    else:
        assert result.returncode == 0, result.stdout + result.stderr
        assert tower.models[PATH] == {"config.json": 663, "model.safetensors": 4096}


HUB_PLANS = [
    (
        "public",
        "",
        {"T": {"config.json": 663, "model.safetensors": 4096}},
        2,
        "4.8 kB from the hub",
    ),
    (
        "public-size-unsaid",
        "",
        {"T": {"config.json": 663, "x": -1}},
        2,
        "size unknown from the hub",
    ),
    (
        "public-not-found",
        "",
        {},
        1,
        f"source hf://TinyLlama/T@{COMMIT} is unreachable from tower: "
        "huggingface_hub.errors.RepositoryNotFoundError: TinyLlama/T",
    ),
    (
        "with-token",
        "\n  token: ${HF_TOKEN}",
        {},
        2,
        f"size unknown from the hub (TinyLlama/T@{COMMIT}): its file list needs the token, "
        "so size and room are checked at apply",
    ),
]


@pytest.mark.parametrize(
    ("token", "hub", "status", "said"), [p[1:] for p in HUB_PLANS], ids=[p[0] for p in HUB_PLANS]
)
def test_plan_reads_the_hubs_file_list_as_apply_does_or_says_it_does_not(
    fake: FakeFleet, token: str, hub: dict[str, dict[str, int]], status: int, said: str
) -> None:
    """An hf:// source without a manifest: plan asks the hub from the host (the command
    apply runs) for its size, or says that a token-gated list is first read at apply."""
    fake.edit(
        "seats/coder.yaml",
        f"  source: store:nas:{SOURCE}\n  revision: r2026-11",
        f"  source: hf://TinyLlama/T@{COMMIT}{token}",
    )
    tower = fake.hosts["tower"]
    tower.hub.update({f"TinyLlama/{name}": files for name, files in hub.items()})
    plan = fake.fleet("plan")
    assert plan.returncode == status, plan.stdout + plan.stderr
    assert said in plan.stdout
    assert tower.tokens == [], "plan sends no token"


@pytest.mark.parametrize("pinned", [False, True], ids=["first-key", "pinned-known-hosts"])
def test_a_store_whose_key_the_host_has_never_seen(fake: FakeFleet, pinned: bool) -> None:
    """Plan writes no host key, so it cannot list such a store; apply records the key
    first (accept-new) unless desired/ pins a known_hosts file, where the key must be."""
    if pinned:
        fake.edit(
            "fleet.yaml",
            "identity_file: /etc/fleet/nas}",
            "identity_file: /etc/fleet/nas, known_hosts: /etc/fleet/nas_hosts}",
        )
    tower = fake.hosts["tower"]
    tower.stores["10.0.0.9"].key_known = False
    plan = fake.fleet("plan")
    if pinned:
        assert plan.returncode == 1, plan.stdout + plan.stderr
        assert "is unreachable from tower: Host key verification failed." in plan.stdout
        return
    assert plan.returncode == 2, plan.stdout + plan.stderr
    assert (
        f"from store nas ({SOURCE}): its host key is not yet known on tower, which apply "
        "records (accept-new) before it lists the store: size and room are checked then"
    ) in plan.stdout
    assert "Blockers" not in plan.stdout
    apply(fake)
    assert tower.models[PATH] == FILES and tower.stores["10.0.0.9"].key_known
