"""The compose runtime reads a host's containers, their live argv, logs and the compose
file fleet wrote out of what the fact script printed, and says when Docker did not answer."""

from __future__ import annotations

import json

import pytest

from fleet.facts.script import FactOutput
from fleet.runtimes import runtime_for
from fleet.runtimes.compose import COMPOSE

ID = "a" * 64
INSPECT = json.dumps(
    [
        {
            "Id": ID,
            "Name": "/fleet-tower-flash-1",
            "State": {"Status": "running", "Pid": 4242},
            "Config": {"Image": "vllm/vllm-openai:v0.18.0", "Labels": {"fleet.seat": "flash"}},
            "Path": "vllm",
            "Args": ["serve", "/models/m"],
        }
    ]
)
COMPOSE_FILE = "name: fleet-tower\nservices:\n  flash:\n    image: vllm/vllm-openai:v0.18.0\n"


@pytest.mark.parametrize(
    ("sections", "argv", "log", "definitions", "error"),
    [
        (
            {
                "docker-rc": {"0": ""},
                "inspect": {"": INSPECT},
                "cmdline": {ID: "python3\n-m\nvllm.entrypoints.openai.api_server\n--port\n8026"},
                "logs": {ID: "INFO GPU KV cache size: 1,000 tokens"},
                "compose": {"": COMPOSE_FILE},
            },
            ("python3", "-m", "vllm.entrypoints.openai.api_server", "--port", "8026"),
            "INFO GPU KV cache size: 1,000 tokens",
            {"flash": {"image": "vllm/vllm-openai:v0.18.0"}},
            None,
        ),
        (
            {"docker-rc": {"0": ""}, "inspect": {"": INSPECT}},
            ("vllm", "serve", "/models/m"),
            "",
            {},
            None,
        ),
        ({"docker-rc": {"127": ""}}, None, None, {}, "docker is not answering on this host"),
    ],
    ids=["live-argv-log-and-file", "no-proc-no-file", "docker-missing"],
)
def test_the_runtime_reads_its_seats(
    sections: dict[str, dict[str, str]],
    argv: tuple[str, ...] | None,
    log: str | None,
    definitions: dict[str, object],
    error: str | None,
) -> None:
    printed = "".join(
        f"@@FLEET {kind} {arg}\n{text}\n"
        for kind, parts in sections.items()
        for arg, text in parts.items()
    )
    seats = COMPOSE.read_seats(FactOutput(printed + "@@FLEET end\n"))
    assert [c.argv for c in seats.instances] == ([argv] if argv else [])
    assert [seats.logs[c.id] for c in seats.instances] == ([log] if argv else [])
    assert (seats.definitions, seats.error) == (definitions, error)


def test_a_gpu_process_belongs_to_the_container_its_cgroup_names() -> None:
    assert COMPOSE.owner(f"0::/system.slice/docker-{ID}.scope") == ID
    assert COMPOSE.owner("0::/user.slice/user-0.slice/session-1.scope") is None


def test_a_host_that_names_no_runtime_runs_compose() -> None:
    from fleet.spec.models import Host

    host = Host.model_validate({"name": "h", "ssh": {"alias": "h"}, "address": "127.0.0.1"})
    assert runtime_for(host) is COMPOSE
    assert "--filter label=fleet.seat=flash " in "".join(COMPOSE.seat_facts(host, "flash"))
