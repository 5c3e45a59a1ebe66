"""Rendered compose files: golden text per host, and the properties apply relies on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from fleet.names import HASH_LABEL
from fleet.runtimes.compose import render_compose
from fleet.spec.load import load_fleet
from fleet.spec.models import DesiredFleet

DESIRED = Path(__file__).resolve().parents[3] / "desired"
GOLDEN = Path(__file__).parent / "golden"


def example(edits: dict[str, tuple[str, str]] | None = None) -> DesiredFleet:
    files = {p.relative_to(DESIRED).as_posix(): p.read_text() for p in DESIRED.rglob("*.yaml")}
    for rel, (old, new) in (edits or {}).items():
        files[rel] = files[rel].replace(old, new)
    loaded = load_fleet(files)
    assert loaded.fleet is not None, loaded.problems
    return loaded.fleet


def on_systemd(host: str) -> dict[str, tuple[str, str]]:
    """The edit that makes an example host a systemd one: `runtime: systemd`, without the
    keys only a compose host has."""
    text = (DESIRED / "hosts" / f"{host}.yaml").read_text()
    compose_only = ("compose_dir:", "gpu_handover:")
    kept = [line for line in text.splitlines(keepends=True) if not line.startswith(compose_only)]
    return {f"hosts/{host}.yaml": (text, "runtime: systemd\n" + "".join(kept))}


@pytest.mark.parametrize("host", ["tower", "rig"], ids=["device-requests", "runtime"])
def test_compose_matches_golden(host: str) -> None:
    text = render_compose(example(), host)
    golden = GOLDEN / f"compose-{host}.yaml"
    if os.environ.get("FLEET_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text()


def services(fleet: DesiredFleet, host: str) -> dict[str, dict[str, object]]:
    return YAML(typ="safe").load(render_compose(fleet, host))["services"]  # type: ignore[no-any-return]


CHANGES = [
    ("context", "seats/sec.yaml", ("context: 262144", "context: 131072")),
    ("kv-budget", "seats/sec.yaml", ("kv_cache_bytes: 22GiB", "kv_cache_bytes: 20GiB")),
    ("speculative-k", "seats/sec.yaml", ("num_tokens: 3", "num_tokens: 2")),
    ("image", "seats/sec.yaml", ("v0.18.0", "v0.11.2")),
    ("gpus", "seats/sec.yaml", ("gpus: [0]", "gpus: [3]")),
    ("env", "seats/sec.yaml", ("port: 8025", "port: 8025\nenv: {A: b}")),
]


@pytest.mark.parametrize(("rel", "edit"), [c[1:] for c in CHANGES], ids=[c[0] for c in CHANGES])
def test_spec_hash_changes_with_the_seat_only(rel: str, edit: tuple[str, str]) -> None:
    before, after = services(example(), "tower"), services(example({rel: edit}), "tower")
    assert before["sec"]["labels"][HASH_LABEL] != after["sec"]["labels"][HASH_LABEL]  # type: ignore[index]
    for name in before:
        if name != "sec":
            assert before[name] == after[name]


def test_alias_changes_do_not_touch_the_container() -> None:
    edited = example({"seats/sec.yaml": ("aliases: [sec, sec-reasoning]", "aliases: [sec]")})
    assert render_compose(edited, "tower") == render_compose(example(), "tower")


def test_argv_carries_every_flag_the_spec_implies() -> None:
    command = services(example(), "tower")["sec"]["command"]
    assert command[:1] == ["/models/Qwen3.5-27B"]
    flags = dict(zip(command[1::2], command[2::2], strict=False))  # type: ignore[index]
    assert flags["--served-model-name"] == "sec"
    assert flags["--max-model-len"] == "262144"
    assert flags["--kv-cache-memory-bytes"] == str(22 * 1024**3)
    assert flags["--speculative-config"] == '{"method":"qwen3_5_mtp","num_speculative_tokens":3}'
    assert flags["--tensor-parallel-size"] == "1"


def test_gpu_handover_follows_the_host() -> None:
    tower = services(example(), "tower")["reason"]
    rig = services(example(), "rig")["llama8b"]
    devices = tower["deploy"]["resources"]["reservations"]["devices"]  # type: ignore[index]
    assert devices == [{"driver": "nvidia", "device_ids": ["2", "3"], "capabilities": ["gpu"]}]
    assert rig["runtime"] == "nvidia"
    assert rig["environment"] == {"NVIDIA_VISIBLE_DEVICES": "0"}
    assert rig["ports"] == ["127.0.0.12:8050:8050"]


@pytest.mark.parametrize(
    ("value", "rendered"),
    [
        ("${HF_TOKEN}", "${HF_TOKEN}"),
        ("price$5", "price$$5"),
        ("a${X}b$c", "a${X}b$$c"),
    ],
    ids=["reference", "literal-dollar", "mixed"],
)
def test_env_references_stay_compose_interpolations(value: str, rendered: str) -> None:
    fleet = example({"seats/sec.yaml": ("port: 8025", f"port: 8025\nenv: {{TOKEN: '{value}'}}")})
    assert services(fleet, "tower")["sec"]["environment"] == {"TOKEN": rendered}
