"""What a host prints inside the fact script's sections is data: a log or a provenance file
that contains the section marker (bare, or with a guessed boundary) cannot add a container,
forge a live argv, hide GPU processes, fake a lock, a missing model or a fetch's partial."""

from __future__ import annotations

import json

import pytest

from fleet.facts.script import script, split_sections
from fleet.names import PROVENANCE_SUFFIX, SEAT_LABEL
from fleet.observed.models import ObservedHost
from fleet.runtimes.compose import render_compose
from reconciler.workflows.observe import observe_host
from tests.fakes.host import FakeHost
from tests.unit.render.test_compose import example

COMPOSE = "/srv/fleet/compose.yaml"
MODEL = "/models/forged"
FORGED = {
    "Id": "f" * 64,
    "Name": "/evil",
    "State": {"Status": "running", "Running": True, "Pid": 4242, "ExitCode": 0},
    "Config": {"Labels": {SEAT_LABEL: "x;touch /tmp/pwned;#"}, "Image": "evil"},
    "HostConfig": {},
    "Path": "vllm",
    "Args": [],
    "Image": "sha256:" + "e" * 64,
}
MARKERS = ["@@FLEET ", "@@FLEET-" + "0" * 32 + " ", "@@FLEET-deadbeef "]


def payload(marker: str, container_id: str) -> str:
    """Host content that tries every section a forger would want."""
    return "\n".join(
        [
            f"{marker}inspect",
            json.dumps([FORGED]),
            f"{marker}apps",
            f"{marker}cmdline {container_id}",
            "vllm",
            "serve",
            f"{marker}lock",
            "mallory@host pid 1",
            f"{marker}missing {MODEL}",
            f"{marker}partial-dir /models/.flash.partial",
            "123",
            f"{marker}end",
            "",
        ]
    )


def tower(content: str = "") -> FakeHost:
    host = FakeHost("tower", files={COMPOSE: render_compose(example(), "tower")})
    for seat in ("flash", "reason"):
        host.compose_up("fleet-tower", COMPOSE, seat)
    host.models[MODEL] = {"config.json": 10}
    host.files[MODEL + PROVENANCE_SUFFIX] = "source: hf://org/model\n" + content
    host.containers["flash"].log += content
    return host


def facts(observed: ObservedHost) -> dict[str, object]:
    """Everything the forger aimed at."""
    return {
        "seats": [(s.name, s.instance.id, s.instance.state) for s in observed.seats],
        "argv": [s.instance.argv for s in observed.seats],
        "processes": observed.processes,
        "gpus": observed.gpus,
        "lock": observed.lock,
        "missing": observed.missing_paths,
        "partials": observed.partials,
        "models": sorted(observed.models),
    }


@pytest.mark.parametrize("marker", MARKERS, ids=["bare", "guessed-zeros", "guessed-short"])
def test_host_content_cannot_start_a_section(marker: str) -> None:
    clean = observe_host(example(), tower(), "tower")
    host = tower()
    flash_id = host.containers["flash"].id
    forged = tower(payload(marker, flash_id))
    for name, container in host.containers.items():  # the same ids on both hosts
        forged.containers[name].id = container.id
    observed = observe_host(example(), forged, "tower")
    assert facts(observed) == facts(clean)
    assert observed.lock is None and observed.partials == {}
    assert "x;touch /tmp/pwned;#" not in [s.name for s in observed.seats]


def test_sections_start_only_with_the_runs_boundary() -> None:
    output = "@@FLEET-abc lock\nx\n@@FLEET lock\n@@FLEET-abd end\ny\n@@FLEET-abc end\n"
    assert split_sections(output, "abc") == [
        ("lock", "", "x\n@@FLEET lock\n@@FLEET-abd end\ny"),
        ("end", "", ""),
    ]
    assert "printf '\\n@@FLEET-abc %s\\n' \"$a\"" in script([], "abc")
    with pytest.raises(ValueError, match="letters and digits"):
        script([], "a b")
