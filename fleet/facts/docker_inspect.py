"""`docker inspect` and `docker image inspect` JSON -> the container facts fleet uses.

Called by `fleet.assemble` on the fact script's output. Only what fleet reports is kept:
never the environment (it may hold secrets), except the GPU hand-over variable.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field

from fleet.base import CoreModel
from fleet.secrets import mask_argv


class ContainerFact(CoreModel):
    """One container as docker reports it."""

    id: str
    name: str
    state: str = Field(description="created, running, restarting, exited, paused or dead")
    exit_code: int = 0
    restart_count: int = 0
    started_at: str = ""
    pid: int = 0
    image: str = Field(description="The image reference the container was created from.")
    image_id: str = ""
    repo_digests: tuple[str, ...] = ()
    labels: dict[str, str] = Field(default_factory=dict)
    argv: tuple[str, ...] = Field((), description="Path + Args: the process docker started.")
    ports: tuple[str, ...] = Field((), description="host_ip:host_port->container_port/proto")
    gpu_request: tuple[str, ...] = Field((), description="GPU ids from DeviceRequests or env")
    runtime: str = ""

    @property
    def running(self) -> bool:
        """True while the container runs."""
        return self.state == "running"


def parse_docker_inspect(containers_json: str, images_json: str = "") -> tuple[ContainerFact, ...]:
    """Containers sorted by name; broken or empty JSON gives an empty tuple."""
    digests = _image_digests(images_json)
    facts = [_container(item, digests) for item in _load_list(containers_json)]
    return tuple(sorted(facts, key=lambda c: c.name))


def _load_list(text: str) -> list[dict[str, Any]]:
    try:
        data = json.loads(text) if text.strip() else []
    except json.JSONDecodeError:
        return []
    return [item for item in data if isinstance(item, dict)] if isinstance(data, list) else []


def _image_digests(text: str) -> dict[str, tuple[str, ...]]:
    return {str(item.get("Id")): tuple(item.get("RepoDigests") or ()) for item in _load_list(text)}


def _container(item: dict[str, Any], digests: dict[str, tuple[str, ...]]) -> ContainerFact:
    state = item.get("State") or {}
    config = item.get("Config") or {}
    host = item.get("HostConfig") or {}
    image_id = str(item.get("Image") or "")
    return ContainerFact(
        id=str(item.get("Id", "")),
        name=str(item.get("Name", "")).lstrip("/"),
        state=str(state.get("Status", "unknown")),
        exit_code=int(state.get("ExitCode") or 0),
        restart_count=int(item.get("RestartCount") or 0),
        started_at=str(state.get("StartedAt") or ""),
        pid=int(state.get("Pid") or 0),
        image=str(config.get("Image") or ""),
        image_id=image_id,
        repo_digests=digests.get(image_id, ()),
        labels={str(k): str(v) for k, v in (config.get("Labels") or {}).items()},
        argv=mask_argv(
            tuple(str(a) for a in [item.get("Path") or "", *(item.get("Args") or [])] if a)
        ),
        ports=_ports(item),
        gpu_request=_gpu_request(host, config),
        runtime=str(host.get("Runtime") or ""),
    )


def _ports(item: dict[str, Any]) -> tuple[str, ...]:
    bound = ((item.get("NetworkSettings") or {}).get("Ports")) or {}
    ports = []
    for container_port, bindings in bound.items():
        for binding in bindings or []:
            ports.append(
                f"{binding.get('HostIp', '')}:{binding.get('HostPort', '')}->{container_port}"
            )
    return tuple(sorted(ports))


def _gpu_request(host: dict[str, Any], config: dict[str, Any]) -> tuple[str, ...]:
    for request in host.get("DeviceRequests") or []:
        if "gpu" in [c for caps in request.get("Capabilities") or [] for c in caps]:
            return tuple(str(i) for i in request.get("DeviceIDs") or ())
    for entry in config.get("Env") or []:
        name, _, value = str(entry).partition("=")
        if name == "NVIDIA_VISIBLE_DEVICES":
            return tuple(v for v in value.split(",") if v)
    return ()
