"""A name the host chose (a model directory, a file in it, a unit file, an argument of an
engine's process) holding a newline, a tab or the run's own section marker is one name:
the fact script, run by a real `sh` on files laid out on disk, prints it so that it cannot
end its section's line early, start a section, or add a line to a listing, and the pure
parsers read it back whole. The fake host plays the same names through observe and prune
(tests/unit/cli/test_models_cli.py); the lab plants one on a real host
(tests/integration/test_models_lab.py)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from fleet.facts.argv import argv_of
from fleet.facts.host_facts import LOCK, MISSING, MODELS
from fleet.facts.model_files import FILES, PARTIALS
from fleet.facts.script import FactOutput, script
from fleet.runtimes.systemd import UNITS, host_units, seat_units

BOUNDARY = "b0a7d3"
MARK = f"@@FLEET-{BOUNDARY} "
FORGED = {"model_type": "forged", "num_hidden_layers": 1}
# names that, printed raw, would each forge something about `real`
NAMES = [
    ("newline", "real\n4096"),
    ("the-runs-marker", f"real\n{MARK}lock"),
    ("percent", "%7265616c"),  # what `real` encodes to: still its own name
]


def run(entries: list[str], tmp_path: Path, path: str = "/usr/bin:/bin") -> FactOutput:
    done = subprocess.run(
        ["sh", "-s"],
        input=script(entries, BOUNDARY),
        capture_output=True,
        text=True,
        env={"PATH": path},
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    return FactOutput(done.stdout, BOUNDARY)


def lay_out(root: Path, name: str) -> None:
    """`real`: a model; beside it `name`, whose config.json and files say other things."""
    (root / "real").mkdir(parents=True)
    (root / "real" / "config.json").write_text('{"model_type": "llama"}')
    (root / "real" / "model.safetensors").write_bytes(b"\0" * 1000)
    (root / name).mkdir()
    (root / name / "config.json").write_text(json.dumps(FORGED))
    # a file whose name, printed as a line of its own, would be `model.safetensors` of size 1
    (root / name / "x\n1\t0\t0\tmodel.safetensors").write_bytes(b"\0" * 7)


@pytest.mark.parametrize("name", [n[1] for n in NAMES], ids=[n[0] for n in NAMES])
def test_a_model_directory_name_is_one_name(tmp_path: Path, name: str) -> None:
    root = tmp_path / "models"
    lay_out(root, name)
    real, odd = str(root / "real"), str(root / name)
    output = run(
        [
            MODELS.entry(str(root), []),
            FILES.entry(str(root), []),
            MISSING.entry([real, odd, str(root / "gone")]),
            LOCK.entry(str(tmp_path)),
        ],
        tmp_path,
    )
    assert output.finished
    models = output[MODELS].dirs
    assert sorted(models) == sorted([real, odd])
    assert models[real].config is not None and models[real].config.model_type == "llama"
    assert models[odd].config is not None and models[odd].config.model_type == "forged"
    files = output[FILES]
    assert {k: f.size for k, f in files[real].items()} == {
        "config.json": 23,
        "model.safetensors": 1000,
    }
    assert sorted(files[odd]) == sorted(["config.json", "x\n1\t0\t0\tmodel.safetensors"])
    assert output[MISSING] == (str(root / "gone"),)
    assert output[LOCK] is None


def test_a_temporary_directory_name_is_one_name(tmp_path: Path) -> None:
    odd = tmp_path / ".real.partial\n.x.partial"
    odd.mkdir()
    (tmp_path / ".real.partial.Ab3dE6gH9j").mkdir()
    found = run([PARTIALS.entry(str(tmp_path))], tmp_path)[PARTIALS]
    assert sorted(found) == sorted([str(odd), str(tmp_path / ".real.partial.Ab3dE6gH9j")])


SYSTEMCTL = """#!/bin/sh
case "$*" in
  *"--value"*) echo 0;;
  "show -p Version"*) echo 252;;
  *) printf 'Id=%s\\nActiveState=inactive\\nMainPID=0\\n' "$2";;
esac
"""


def test_a_unit_file_name_is_one_unit(tmp_path: Path) -> None:
    units, tools = tmp_path / "units", tmp_path / "bin"
    units.mkdir()
    tools.mkdir()
    (tools / "systemctl").write_text(SYSTEMCTL)
    (tools / "systemctl").chmod(0o755)
    names = ["fleet-a.service", "fleet-b.service\nfleet-a.service", "fleet-c d.service"]
    for name in names:
        (units / name).write_text("[Service]\nExecStart=/usr/bin/true\n")
    (units / "hand made.service").write_text("[Service]\nExecStart=/usr/bin/llama-server\n")
    on_path = f"{tools}:/usr/bin:/bin"
    every = run([UNITS.entry(str(units), host_units(str(units)))], tmp_path, on_path)[UNITS]
    assert sorted(i.id for i in every.instances) == sorted([*names, "hand made.service"])
    one = run([UNITS.entry(str(units), seat_units("a", str(units)))], tmp_path, on_path)[UNITS]
    assert [i.id for i in one.instances] == ["fleet-a.service"]


def test_an_argument_holding_a_newline_stays_one_argument() -> None:
    cmdline = "\x00".join(
        [
            "vllm",
            "serve",
            "--served-model-name",
            "a\n--enable-prefix-caching",
            "",
            "--port",
            "8000",
            "",
        ]
    )
    assert argv_of(cmdline) == (
        "vllm",
        "serve",
        "--served-model-name",
        "a\n--enable-prefix-caching",
        "--port",
        "8000",
    )
    assert argv_of("vllm\nserve\n--port\n8000\n") == ("vllm", "serve", "--port", "8000")
