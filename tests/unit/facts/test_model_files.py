"""The model-weights facts: free space (df), a model's files (find) and a fetch's source,
each from its command's recorded or real output."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fleet.facts.model_files import (
    DISK,
    FILES,
    PARTIALS,
    SOURCES,
    DiskFree,
    ModelFile,
    SourceListing,
    parse_df,
    parse_file_list,
)
from fleet.facts.provenance import RecordedFile, file_line, parse_provenance, recorded_files
from fleet.facts.script import FactOutput, script
from fleet.render.model_fetch import temporary_glob

DF_CASES = [
    (
        "vda-root",  # recorded: `df -PB1 /` on a cloud VM
        "Filesystem         1-blocks        Used   Available Capacity Mounted on\n"
        "/dev/vda       270553174016 27289743360 81654550528      26% /\n",
        DiskFree(
            filesystem="/dev/vda",
            size=270553174016,
            used=27289743360,
            available=81654550528,
            mount="/",
        ),
    ),
    (
        "nvme-models-mount",
        "Filesystem      1-blocks          Used    Available Capacity Mounted on\n"
        "/dev/nvme1n1p1 3936818806784 3494573625344 442245181440      89% /models\n",
        DiskFree(
            filesystem="/dev/nvme1n1p1",
            size=3936818806784,
            used=3494573625344,
            available=442245181440,
            mount="/models",
        ),
    ),
    ("no-such-path", "", None),
    ("header-only", "Filesystem 1-blocks Used Available Capacity Mounted on\n", None),
]


@pytest.mark.parametrize(
    ("text", "expected"), [c[1:] for c in DF_CASES], ids=[c[0] for c in DF_CASES]
)
def test_df(text: str, expected: DiskFree | None) -> None:
    assert parse_df(text) == expected


def test_file_list_reads_find_printf() -> None:
    text = (
        "663\t1796348513.6944446720\t1789000000.5000000000\tconfig.json\0"
        "4096\t17\t\tshards/model-00001.safetensors\0bad\0"
    )
    assert parse_file_list(text) == {
        "config.json": ModelFile(
            size=663, accessed=1796348513.6944446720, modified="1789000000.5000000000"
        ),
        "shards/model-00001.safetensors": ModelFile(size=4096, accessed=17.0),
    }


def run_script(entry: str) -> FactOutput:
    done = subprocess.run(["sh", "-s"], input=script([entry]), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return FactOutput(done.stdout)


def test_disk_and_files_on_a_real_directory(tmp_path: Path) -> None:
    model = tmp_path / "Qwen3-0.6B"
    (model / ".cache" / "huggingface").mkdir(parents=True)
    (model / ".cache" / "huggingface" / "x.lock").write_text("hf's own")
    (model / "config.json").write_text("{}")
    (model / "model.safetensors").write_bytes(b"\0" * 1000)
    (tmp_path / "m.gguf").write_bytes(b"GGUF" + b"\0" * 60)
    output = run_script(DISK.entry(str(tmp_path)) + FILES.entry(str(tmp_path), []))
    disk = output[DISK]
    assert disk is not None and disk.available > 0
    files = output[FILES]
    assert {p: {k: f.size for k, f in v.items()} for p, v in files.items()} == {
        str(model): {"config.json": 2, "model.safetensors": 1000},
        str(tmp_path / "m.gguf"): {"": 64},
    }
    written = files[str(model)]["model.safetensors"].modified
    assert written is not None
    assert float(written) == pytest.approx((model / "model.safetensors").stat().st_mtime)


def test_partials_are_the_hidden_temporary_paths_of_the_root(tmp_path: Path) -> None:
    (tmp_path / ".Qwen3-32B.partial.Ab3dE6gH9j").mkdir()
    (tmp_path / ".Qwen3-32B.partial.Ab3dE6gH9j" / "model.safetensors").write_bytes(b"\0" * 1000)
    (tmp_path / ".q4.gguf.partial").write_bytes(b"\0" * 64)  # an older fleet's fixed name
    (tmp_path / ".x.partial.short").mkdir()
    (tmp_path / "Qwen3-8B").mkdir()
    (tmp_path / ".hidden").mkdir()
    found = run_script(PARTIALS.entry(str(tmp_path)))[PARTIALS]
    assert sorted(found) == [
        str(tmp_path / ".Qwen3-32B.partial.Ab3dE6gH9j"),
        str(tmp_path / ".q4.gguf.partial"),
    ]
    assert found[str(tmp_path / ".q4.gguf.partial")] == 64
    assert found[str(tmp_path / ".Qwen3-32B.partial.Ab3dE6gH9j")] >= 1000
    assert run_script(PARTIALS.entry(str(tmp_path / "Qwen3-8B")))[PARTIALS] == {}


def test_sources_list_only_absent_paths_and_say_why_not(tmp_path: Path) -> None:
    (tmp_path / "here").mkdir()
    partial = tmp_path / ".gone.partial.Ab3dE6gH9j"
    partial.mkdir()
    (partial / "a").write_bytes(b"x" * 10)
    listing = "printf '663\\tconfig.json\\0004096\\tmodel.safetensors\\000'"
    refused = "echo 'ssh: connect to host store port 22: Connection refused' >&2; exit 255"
    entry = SOURCES.entry(
        {
            str(tmp_path / "here"): (listing, temporary_glob(str(tmp_path / "here"))),
            str(tmp_path / "gone"): (listing, temporary_glob(str(tmp_path / "gone"))),
            str(tmp_path / "far"): (refused, temporary_glob(str(tmp_path / "far"))),
        }
    )
    found = run_script(entry)[SOURCES]
    assert sorted(found) == [str(tmp_path / "far"), str(tmp_path / "gone")]
    gone, far = found[str(tmp_path / "gone")], found[str(tmp_path / "far")]
    assert (gone.files, gone.error, gone.size) == (
        {"config.json": 663, "model.safetensors": 4096},
        None,
        4759,
    )
    assert gone.partial_bytes >= 10  # du -sb: the file and the directory itself
    assert far == SourceListing(error="ssh: connect to host store port 22: Connection refused")


def test_recorded_files_read_back_what_fleet_wrote() -> None:
    digest = "ab" * 32
    text = (
        "Source: store:nas:/srv/models/X\nRevision: v1\n"
        "# files: size, sha256 (or -), path\n"
        + file_line("config.json", 663, None)
        + "\n"
        + file_line("weights dir/model.safetensors", 4096, digest)
        + "\n"
        + file_line("tokenizer.json", 17, None, "1789000000.1234567890")
        + "\n"
        + file_line("", 9, digest, "1789000000")
        + "\n"
    )
    provenance = parse_provenance(text)
    assert provenance.as_dict() == {"source": "store:nas:/srv/models/X", "revision": "v1"}
    assert recorded_files(provenance) == {
        "config.json": RecordedFile(size=663),  # written before fleet noted mtimes
        "weights dir/model.safetensors": RecordedFile(size=4096, sha256=digest),
        "tokenizer.json": RecordedFile(size=17, mtime="1789000000.1234567890"),
        "": RecordedFile(size=9, sha256=digest, mtime="1789000000"),
    }
    assert recorded_files(parse_provenance("base model: Qwen/Qwen3-8B\n")) is None


UNKNOWN_KEY = (
    "No ED25519 host key is known for [10.0.0.9]:2222 and you have requested strict checking."
)
CHANGED_KEY = (
    "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n"
    "@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\n"
    "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@\n"
    "Offending ED25519 key in /root/.ssh/known_hosts:3\n"
    f"{UNKNOWN_KEY}"
)


@pytest.mark.parametrize(
    ("said", "unknown"),
    [
        (f"{UNKNOWN_KEY}\r\nHost key verification failed.", True),
        (f"{CHANGED_KEY}\r\nHost key verification failed.", False),
        ("ssh: connect to host 10.0.0.9 port 2222: Connection refused", False),
    ],
    ids=["never-seen", "changed", "refused"],
)
def test_a_listing_refused_only_for_a_key_never_seen_says_so(said: str, unknown: bool) -> None:
    text = f"@@FLEET source /m\n{said}\n@@FLEET source-rc /m 255\n@@FLEET end\n"
    listing = FactOutput(text)[SOURCES]["/m"]
    assert (listing.host_key_unknown, listing.files) == (unknown, {})
    assert listing.error is not None
