"""The systemd runtime reading a host's fact script, recorded on the lab's systemd GPU host
with one seat applied (tests/corpus/systemd/fact-script-rtx3090-fleet-coder.txt): the seat,
its GPU, its log, its spec hash, and a hand edit of its unit as drift."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from pydantic import ValidationError

from fleet.names import HASH_LABEL
from fleet.observed.assemble import assemble_host
from fleet.runtimes import runtime_for
from fleet.runtimes import systemd_unit as units
from fleet.runtimes.systemd import (
    HAND_EDITED,
    SYSTEMD,
    SystemdHostSettings,
    host_units,
    parse_unit_definition,
)
from fleet.spec.models import DesiredFleet, GpuSpec, Host, HostSsh
from tests.conftest import CORPUS
from tests.unit.runtimes.test_systemd_unit import seat, with_verbosity

RECORDED = (CORPUS / "systemd" / "fact-script-rtx3090-fleet-coder.txt").read_text()
HOST = Host(
    name="rtx3090",
    ssh=HostSsh(alias="rtx3090"),
    address="198.18.0.2",
    runtime="systemd",
    gpus=(GpuSpec(index=0, name="NVIDIA GeForce RTX 3090", memory="24576MiB"),),
)
CODER = seat(served_name="coder", port=8071)


def test_the_recorded_host_has_its_seat_running_on_its_gpu() -> None:
    observed = assemble_host("rtx3090", RECORDED, runtime_for(HOST))
    coder = observed.seat("coder")
    assert coder is not None and coder.managed
    assert (coder.instance.id, coder.instance.state, coder.instance.restart_count) == (
        "fleet-coder.service",
        "running",
        0,
    )
    assert coder.instance.image == "/usr/local/bin/llama-server"
    assert (coder.gpus, coder.vram_mib, coder.port, coder.served_names) == (
        (0,),
        7252,
        8071,
        ("coder",),
    )
    assert coder.engine is not None and coder.engine.kv_cache_tokens == 16384
    assert observed.runtime_error is None


def test_the_recorded_unit_carries_the_hash_plan_renders() -> None:
    recorded = with_verbosity(RECORDED, units.render_unit(CODER))
    observed = assemble_host("rtx3090", recorded, SYSTEMD)
    coder = observed.seat("coder")
    assert coder is not None and coder.definition is not None
    wanted = SYSTEMD.render_seat(CODER, HOST)
    assert coder.instance.labels[HASH_LABEL] == SYSTEMD.spec_hash(wanted)
    assert coder.definition == wanted


@pytest.mark.parametrize(
    ("old", "new"),
    [("--port 8071", "--port 8075"), ("NeedDaemonReload=no", "NeedDaemonReload=yes")],
    ids=["unit-file-edited", "need-daemon-reload"],
)
def test_a_hand_edit_is_drift(old: str, new: str) -> None:
    edited = RECORDED.replace(old, new)
    assert edited != RECORDED
    coder = assemble_host("rtx3090", edited, SYSTEMD).seat("coder")
    assert coder is not None and coder.instance.labels[HASH_LABEL] == HAND_EDITED


def test_no_systemd_answer_is_an_error_and_a_hand_made_unit_is_unmanaged() -> None:
    silent = RECORDED.replace("@@FLEET systemd-rc 0", "@@FLEET systemd-rc 1")
    assert assemble_host("rtx3090", silent, SYSTEMD).runtime_error == (
        "systemd is not answering on this host"
    )
    hand = RECORDED.replace("X-Fleet-Seat=coder\n", "").replace(
        "fleet-coder.service", "llama-server.service"
    )
    observed = assemble_host("rtx3090", hand, SYSTEMD)
    (only,) = observed.seats
    assert (only.managed, only.name, only.engine_name) == (False, "llama-server", "llama.cpp")


def test_unit_definition_reads_argv_environment_and_labels() -> None:
    text = "[Unit]\nX-Fleet-Seat=a\nX-Fleet-Spec-Hash=h\n[Service]\n" + (
        'ExecStart=/bin/x "two words" 100%% $$HOME\nEnvironment="A=b c" "CUDA_VISIBLE_DEVICES="\n'
    )
    definition = parse_unit_definition(text)
    assert definition["image"] == "/bin/x"
    assert definition["command"] == ["two words", "100%", "$HOME"]
    assert definition["environment"] == {"A": "b c", "CUDA_VISIBLE_DEVICES": ""}
    assert definition["labels"][HASH_LABEL] == "h"


@pytest.mark.parametrize(
    ("unit", "listed"),
    [
        ("ExecStart=/usr/local/bin/llama-server -m /models/m.gguf --port 8080", True),
        ("ExecStart=/opt/venv/bin/vllm serve /models/m --port 8000", True),
        ("ExecStart=/usr/bin/python3 -m sglang.launch_server --model-path /models/m", True),
        ("ExecStart=/usr/bin/python3.11 -m sglang.launch_server --model-path /models/m", True),
        ("ExecStart=/usr/sbin/nginx -g 'daemon off;'", False),
        ("ExecStart=/usr/bin/python3 -m http.server 8000", False),
    ],
    ids=["llama-server", "vllm", "sglang", "sglang-python3.11", "nginx", "python-other"],
)
def test_a_hand_made_unit_of_every_engine_is_listed(
    tmp_path: Path, unit: str, listed: bool
) -> None:
    """The host's unit listing, run by a real shell on a unit directory holding one
    hand-made unit: every registered engine's executable is seen, nothing else is."""
    (tmp_path / "hand-made.service").write_text(f"[Service]\n{unit}\n")
    script = host_units(str(tmp_path)) + "\n  printf '%s\\n' \"$u\"\ndone"
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=False)
    assert (out.stdout.split() == ["hand-made.service"]) is listed


def test_a_host_places_its_units_and_secrets_files_where_it_says() -> None:
    """`unit_dir` and `env_dir` are the systemd host's own settings: the fact script reads
    units there and the unit's EnvironmentFile names the secrets file there."""
    host = HOST.model_copy(
        update={"settings": SystemdHostSettings(unit_dir="/run/fleet/units", env_dir="/srv/keys")}
    )
    secret = seat(name="coder", env={"HF_TOKEN": "${HF_TOKEN}"})
    fleet = DesiredFleet(hosts={host.name: host}, seats={"coder": secret})
    rendered = SYSTEMD.render_host(fleet, host.name)
    assert rendered.startswith("# /run/fleet/units/fleet-coder.service\n")
    assert "\nEnvironmentFile=/srv/keys/fleet-coder.env\n" in rendered
    assert "for p in /run/fleet/units/*.service;" in "".join(SYSTEMD.host_facts(host))
    assert '[ -f /run/fleet/units/"$u" ]' in "".join(SYSTEMD.seat_facts(host, "coder"))


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("env_dir", "/etc/fleet keys", "env_dir: String should match pattern"),
        ("compose_dir", "/srv/fleet", "compose_dir: a setting of compose hosts"),
    ],
    ids=["path-with-a-space", "compose-key"],
)
def test_a_systemd_hosts_own_keys_are_checked(key: str, value: str, message: str) -> None:
    data = {"name": "h", "ssh": {"alias": "h"}, "address": "10.0.0.1", "runtime": "systemd"}
    with pytest.raises(ValidationError) as raised:
        Host.model_validate({**data, key: value})
    assert message.split(": ", 1)[1] in str(raised.value) and key in str(raised.value)
