"""Which Docker container a process belongs to, from its `/proc/<pid>/cgroup`.

Called by the compose runtime (`fleet.runtimes.compose`) to map the engine processes
nvidia-smi lists (the engine's child, not the container's main pid) to containers. Each
line is `hierarchy-ID:controllers:path`;
Docker puts a container's processes under `/docker/<id>` with the cgroupfs driver (cgroup
v1, and v2 `0::/docker/<id>`) and under `/system.slice/docker-<id>.scope` with the systemd
driver (the v2 default). `<id>` is the 64-hex container id. A process outside any
container (`0::/user.slice/...`, `0::/init.scope`) or seen from inside one (`0::/`) gives
None; so do other runtimes (podman's `libpod-`, Kubernetes' `cri-containerd-`).

`parse_cgroup_unit` maps a process to the systemd service it runs in, for seats that are
units: systemd puts a service's processes under `.../system.slice/<unit>.service` (v2
`0::/system.slice/fleet-coder.service`, v1 `1:name=systemd:/system.slice/...`).
"""

from __future__ import annotations

import re

from fleet.facts._text import clean_lines

_LINE = re.compile(r"^\d+:[^:]*:(?P<path>/.*)$")
_SERVICE = re.compile(r"/(?P<unit>[^/]+\.service)(?=/|$)")
_DOCKER = re.compile(r"/docker[/-](?P<id>[0-9a-f]{64})(?=\.scope\b|/|$)")


def parse_cgroup(text: str) -> str | None:
    """The 64-hex Docker container id of the process, or None.

    With nested containers (Docker in Docker) the outermost id is returned: it is the one
    the host's Docker engine knows.
    """
    for line in clean_lines(text):
        match = _LINE.match(line.strip())
        if match and (docker := _DOCKER.search(match.group("path"))):
            return docker.group("id")
    return None


def parse_cgroup_unit(text: str) -> str | None:
    """The system service a process runs in (`fleet-coder.service`), or None: a process
    in a container, a scope, the init scope or a user's session has no such unit."""
    for line in clean_lines(text):
        match = _LINE.match(line.strip())
        path = match.group("path") if match else ""
        if "/user.slice" in path or _DOCKER.search(path):
            continue
        services = _SERVICE.findall(path)
        if services:
            return str(services[-1])
    return None
