"""The systemd unit of a seat: what ExecStart, Environment= and the secrets file say, and
that systemd reads them back as written (checked against a unit run on a lab systemd host,
tests/corpus/systemd/rec-demo.service and the argv its process logged)."""

from __future__ import annotations

import ast
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from fleet.facts.unit_journal import parse_unit_journal
from fleet.runtimes import systemd_unit as su
from fleet.spec.models import Seat
from tests.conftest import CORPUS

SYSTEMD = CORPUS / "systemd"


def seat(**changes: Any) -> Seat:
    fields: dict[str, Any] = {
        "name": "coder",
        "host": "rtx3090",
        "gpus": (0,),
        "engine": "llama.cpp",
        "image": "/usr/local/bin/llama-server",
        "model": "/models/qwen3-8b-q4_k_m.gguf",
        "served_name": "qwen3-8b",
        "context": 8192,
        "parallel": 2,
        "port": 8080,
    }
    return Seat(**{**fields, **changes})


def lines_of(text: str, key: str) -> list[str]:
    return [ln.split("=", 1)[1] for ln in text.splitlines() if ln.startswith(key + "=")]


def test_gpu_seat_unit() -> None:
    text = su.render_unit(seat())
    assert lines_of(text, "ExecStart") == [
        "/usr/local/bin/llama-server --model /models/qwen3-8b-q4_k_m.gguf --alias qwen3-8b "
        "--host 0.0.0.0 --port 8080 --ctx-size 16384 --parallel 2 --n-gpu-layers 999 --metrics "
        "-lv 4"
    ]
    assert lines_of(text, "Environment") == ['"CUDA_VISIBLE_DEVICES=0"']
    assert lines_of(text, "Restart") == ["on-failure"]
    assert lines_of(text, "EnvironmentFile") == []
    assert lines_of(text, su.HASH_KEY) == [su.spec_hash(su.unit_body(seat()))]
    assert su.read_spec_hash(text) == su.spec_hash(su.unit_body(seat()))


@pytest.mark.parametrize(
    ("changes", "environment", "layers"),
    [
        ({"gpus": ()}, ['"CUDA_VISIBLE_DEVICES="'], "0"),
        ({"gpus": (0, 1)}, ['"CUDA_VISIBLE_DEVICES=0,1"'], "999"),
        (
            {"env": {"LLAMA_ARG_FLASH_ATTN": "on"}},
            ['"CUDA_VISIBLE_DEVICES=0"', '"LLAMA_ARG_FLASH_ATTN=on"'],
            "999",
        ),
    ],
    ids=["cpu-seat-sees-no-gpu", "two-gpus", "plain-env"],
)
def test_gpus_and_plain_environment(
    changes: dict[str, Any], environment: list[str], layers: str
) -> None:
    text = su.render_unit(seat(**changes))
    assert lines_of(text, "Environment") == environment
    assert f"--n-gpu-layers {layers} " in lines_of(text, "ExecStart")[0]


def test_secrets_go_to_the_environment_file_only() -> None:
    secret = seat(env={"HF_TOKEN": "${HF_TOKEN}", "AUTH": "Bearer ${API_KEY}", "MODE": "x"})
    text = su.render_unit(secret)
    assert lines_of(text, "EnvironmentFile") == ["/etc/fleet/fleet-coder.env"]
    assert lines_of(text, "Environment") == ['"CUDA_VISIBLE_DEVICES=0"', '"MODE=x"']
    assert "${" not in text.replace("# from the environment", "")
    values = {"HF_TOKEN": "hf_abc", "API_KEY": 'k$y"1'}
    env_file = su.render_env_file(secret, values)
    assert env_file is not None
    assert env_file.splitlines()[1:] == ['AUTH="Bearer k\\$y\\"1"', 'HF_TOKEN="hf_abc"']
    assert su.render_env_file(seat(), values) is None
    with pytest.raises(KeyError):
        su.render_env_file(secret, {"HF_TOKEN": "x"})


def test_recorded_unit_escapes_are_what_the_renderer_writes() -> None:
    unit = (SYSTEMD / "rec-demo.service").read_text()
    journal = parse_unit_journal(
        (SYSTEMD / "journal-restarted-after-kill9.txt").read_text(), "rec-demo.service"
    )
    logged = ast.literal_eval(journal.lines[0].removeprefix("argv "))  # sys.argv[0] is "-c"
    script = unit.split('-c "', 1)[1].split('" "two words"', 1)[0]
    argv = ["/usr/bin/python3", "-c", script, *logged[1:]]
    rendered = [su.quote_exec_arg(a) for a in argv]
    recorded = lines_of(unit, "ExecStart")[0]
    # the recorded unit also quoted `100%%`, which needs no quotes
    assert recorded == " ".join(
        w if w.startswith('"') else f'"{w}"' if "%" in w else w for w in rendered
    )
    plain = su.quote_env_assignment("PLAIN", "a b % c")
    assert lines_of(unit, "Environment")[0].startswith(plain + " ")
    assert (SYSTEMD / "rec.env").read_text().splitlines()[1] == su.render_env_file(
        seat(env={"SECRET_TOKEN": "${T}"}), {"T": 'tok$en "q" x'}
    ).splitlines()[1]


@pytest.mark.parametrize(
    ("changes", "same"),
    [({}, True), ({"port": 8081}, False), ({"context": 4096}, False), ({"env": {"A": "b"}}, False)],
    ids=["unchanged", "port", "context", "env"],
)
def test_spec_hash_follows_the_seat(changes: dict[str, Any], same: bool) -> None:
    before = su.read_spec_hash(su.render_unit(seat()))
    assert (su.read_spec_hash(su.render_unit(seat(**changes))) == before) is same


def test_vllm_seat_runs_vllm_serve_and_unit_names() -> None:
    vllm = seat(
        engine="vllm",
        image="/usr/local/bin/vllm",
        model="/models/Llama-3.1-8B-Instruct",
        parallel=None,
    )
    assert lines_of(su.render_unit(vllm), "ExecStart")[0].startswith("/usr/local/bin/vllm serve ")
    assert (su.unit_name("coder"), su.unit_path("coder")) == (
        "fleet-coder.service",
        "/etc/systemd/system/fleet-coder.service",
    )
    assert su.read_spec_hash((SYSTEMD / "rec-demo.service").read_text()) == "0123456789abcdef"
    assert su.read_spec_hash("[Unit]\nDescription=by hand\n") is None


def with_verbosity(recorded: str, rendered: str) -> str:
    """A unit recorded before fleet rendered `-lv 4` (the verbosity b11434 needs for its
    facts) as fleet renders it since: the flag after `--metrics`, the rendered unit's hash."""
    old, new = su.read_spec_hash(recorded), su.read_spec_hash(rendered)
    assert old is not None and new is not None
    return recorded.replace("999 --metrics\n", "999 --metrics -lv 4\n").replace(old, new)


def test_recorded_seat_unit_is_what_render_writes() -> None:
    recorded = (SYSTEMD / "fleet-coder.service").read_text()
    rendered = su.render_unit(seat())
    assert rendered == with_verbosity(recorded, rendered)


# systemd ends a unit-file line on \n, \r and NUL; a value holding one must not reach the
# file raw (validate refuses control characters in desired/; the renderer escapes anyway)
HOSTILE = "x\rBogusKey=1\n[Service]\nExecStartPre=/bin/id\t\x0b\"'$HOME%n\\"


def test_every_line_ending_systemd_knows_is_escaped_in_a_unit() -> None:
    unit = su.render_unit(
        seat(
            served_name=HOSTILE,
            extra_args=("--chat-template", HOSTILE),
            env={"MODE": HOSTILE, "KEY": "${KEY}"},
        )
    )
    lines = unit.replace("\r", "\n").split("\n")
    assert not [ln for ln in lines if ln.startswith(("BogusKey", "ExecStartPre"))]
    assert [ln for ln in lines if ln.startswith("[")] == ["[Unit]", "[Service]", "[Install]"]
    env_file = su.render_env_file(seat(env={"KEY": "${KEY}"}), {"KEY": HOSTILE}) or ""
    assert len(env_file.replace("\r", "\n").splitlines()) == 2


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze")
def test_systemd_reads_a_unit_of_hostile_values_as_one_clean_unit(tmp_path: Path) -> None:
    """systemd's own parser (`systemd-analyze verify`): no injected key, no broken quote."""
    hostile = seat(
        image="/bin/true",
        served_name=HOSTILE,
        extra_args=("--chat-template", HOSTILE, "--x", "a b\tc"),
        env={"MODE": HOSTILE},
    )
    unit = tmp_path / "fleet-coder.service"
    unit.write_text(su.render_unit(hostile))
    result = subprocess.run(
        ["systemd-analyze", "verify", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    said = [ln for ln in result.stderr.splitlines() if str(unit) in ln or "fleet-coder" in ln]
    assert result.returncode == 0, said
    assert not [ln for ln in said if "Unknown" in ln or "quoting" in ln or "Ignoring" in ln]
