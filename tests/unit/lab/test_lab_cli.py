"""`python -m tests.lab`: `up --systemd` asks for the systemd hosts, and `rewrite-desired`
points a copy of the llama.cpp example at them (tests/lab/examples.py), so a person can
apply that example by hand as scripts/demo.sh applies desired/. Nothing here starts a host."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.lab import nspawn
from tests.lab.__main__ import parse
from tests.lab.examples import point_at_lab
from tests.lab.lab import Lab
from tests.lab.procs import LabError

REPO = Path(__file__).resolve().parents[3]
LLAMACPP = REPO / "examples" / "llamacpp-fleet" / "desired"


@pytest.mark.parametrize(
    ("argv", "systemd"),
    [(["up", "--systemd"], True), (["up"], False), (["down"], False), (["status"], False)],
    ids=["up-systemd", "up", "down", "status"],
)
def test_systemd_hosts_are_asked_for_with_up(argv: list[str], systemd: bool) -> None:
    assert parse(argv).systemd is systemd


@pytest.mark.parametrize(
    "argv",
    [["down", "--systemd"], ["status", "--systemd"], ["rewrite-desired", "d", "--systemd"]],
    ids=["down", "status", "rewrite-desired"],
)
def test_systemd_goes_with_up_only(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse(argv)
    assert exited.value.code == 2
    assert "--systemd goes with up" in capsys.readouterr().err


def lab_with_systemd_hosts(root: Path) -> Lab:
    """A lab (not up) whose systemd hosts are booted, as `running()` adds them."""
    lab = Lab(root=root, slot=3)
    for spec in nspawn.specs():
        lab.hosts[spec.name] = nspawn.SystemdHost(spec, root / "hosts" / spec.name, lab.slot)
    return lab


def test_the_llamacpp_example_points_at_the_labs_systemd_hosts_and_validates(
    tmp_path: Path,
) -> None:
    lab = lab_with_systemd_hosts(tmp_path / "lab")
    desired = tmp_path / "desired"
    shutil.copytree(LLAMACPP, desired)
    point_at_lab(lab, desired)
    texts = {p.relative_to(desired).as_posix(): p.read_text() for p in desired.rglob("*.yaml")}
    assert not [name for name, text in texts.items() if "192.168.10." in text]
    for host in ("rtx3090", "apu", "rtx5070", "gateway"):
        assert f"address: {lab.address_of(host)}\n" in texts[f"hosts/{host}.yaml"]
    assert f"url: http://{lab.address_of('gateway')}:4000" in texts["gateway.yaml"]
    assert "command: fleet-gateway-restart" in texts["gateway.yaml"]
    assert "retired_aliases: [sec-old, code-legacy]" in texts["gateway.yaml"]
    for seat, host in (("coder", "rtx3090"), ("mid", "rtx5070"), ("big", "apu")):
        model = next(ln for ln in texts[f"seats/{seat}.yaml"].splitlines() if "model:" in ln)
        assert model.split("/models/")[1] in lab.hosts[host].spec.models, (seat, model)
    validated = subprocess.run(
        [sys.executable, "-m", "reconciler", "validate", "--desired", str(desired)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert validated.returncode == 0, validated.stdout + validated.stderr


def test_the_llamacpp_example_needs_the_systemd_hosts_up(tmp_path: Path) -> None:
    desired = tmp_path / "desired"
    shutil.copytree(LLAMACPP, desired)
    with pytest.raises(LabError, match=r"no apu, rtx3090, rtx5070: .* up --systemd"):
        point_at_lab(Lab(root=tmp_path / "lab", slot=3), desired)
