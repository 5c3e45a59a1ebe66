"""The systemd runtime reading a host's fact script, recorded on the lab's systemd GPU host
with one seat applied (tests/corpus/systemd/fact-script-rtx3090-fleet-coder.txt): the seat,
its GPU, its log, its spec hash, and a hand edit of its unit as drift."""

from __future__ import annotations

import pytest

from fleet.names import HASH_LABEL
from fleet.observed.assemble import assemble_host
from fleet.runtimes import runtime_for
from fleet.runtimes import systemd_unit as units
from fleet.runtimes.systemd import HAND_EDITED, SYSTEMD, parse_unit_definition
from fleet.spec.models import GpuSpec, Host, HostSsh
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
    assert (coder.container.id, coder.container.state, coder.container.restart_count) == (
        "fleet-coder.service",
        "running",
        0,
    )
    assert coder.container.image == "/usr/local/bin/llama-server"
    assert (coder.gpus, coder.vram_mib, coder.port, coder.served_names) == (
        (0,),
        7252,
        8071,
        ("coder",),
    )
    assert coder.engine is not None and coder.engine.kv_cache_tokens == 16384
    assert observed.docker_error is None


def test_the_recorded_unit_carries_the_hash_plan_renders() -> None:
    recorded = with_verbosity(RECORDED, units.render_unit(CODER))
    observed = assemble_host("rtx3090", recorded, SYSTEMD)
    coder = observed.seat("coder")
    assert coder is not None and coder.definition is not None
    wanted = SYSTEMD.render_seat(CODER, HOST)
    assert coder.container.labels[HASH_LABEL] == SYSTEMD.spec_hash(wanted)
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
    assert coder is not None and coder.container.labels[HASH_LABEL] == HAND_EDITED


def test_no_systemd_answer_is_an_error_and_a_hand_made_unit_is_unmanaged() -> None:
    silent = RECORDED.replace("@@FLEET systemd-rc 0", "@@FLEET systemd-rc 1")
    assert assemble_host("rtx3090", silent, SYSTEMD).docker_error == (
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
