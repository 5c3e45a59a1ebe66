"""`docker inspect` and `docker image inspect` JSON -> the container facts fleet uses.

Called by the compose runtime (`fleet.runtimes.compose`) on the fact script's output;
each container becomes the neutral `fleet.facts.instance.Instance` every runtime reports
a seat instance in (`fleet.runtimes.base.SeatInstances`). Only what fleet reports is kept.
The environment is kept only as the container set it beyond its image's own defaults
(what `fleet import` writes into desired/), and every value that looks secret (by its
name, its shape, or credentials in a URL) is replaced by a `${NAME}` reference right here:
no secret value leaves this parser.
"""

from __future__ import annotations

import json
from typing import Any

from fleet.facts.instance import Instance
from fleet.secrets import mask_argv, mask_env_value

HANDOVER_VARIABLES = frozenset({"NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES"})


def parse_docker_inspect(containers_json: str, images_json: str = "") -> tuple[Instance, ...]:
    """Containers sorted by name; broken or empty JSON gives an empty tuple."""
    images = _load_list(images_json)
    digests = _image_digests(images)
    defaults = {str(i.get("Id")): _env_pairs(_mapping(i.get("Config")).get("Env")) for i in images}
    facts = [_container(item, digests, defaults) for item in _load_list(containers_json)]
    return tuple(sorted(facts, key=lambda c: c.name))


def _load_list(text: str) -> list[dict[str, Any]]:
    try:
        data = json.loads(text) if text.strip() else []
    except (json.JSONDecodeError, RecursionError):
        return []
    return [item for item in data if isinstance(item, dict)] if isinstance(data, list) else []


def _image_digests(images: list[dict[str, Any]]) -> dict[str, tuple[str, ...]]:
    return {
        str(item.get("Id")): tuple(str(d) for d in _items(item.get("RepoDigests")))
        for item in images
    }


def _env_pairs(value: Any) -> dict[str, str]:
    pairs = (str(entry).partition("=") for entry in _items(value))
    return {name: val for name, _, val in pairs if name}


def _own_env(config: dict[str, Any], image_env: dict[str, str]) -> dict[str, str]:
    """What the container set beyond its image (the GPU hand-over excepted), masked."""
    own = {
        name: value
        for name, value in _env_pairs(config.get("Env")).items()
        if image_env.get(name) != value and name not in HANDOVER_VARIABLES
    }
    return {name: mask_env_value(name, value) for name, value in sorted(own.items())}


def _container(
    item: dict[str, Any],
    digests: dict[str, tuple[str, ...]],
    image_env: dict[str, dict[str, str]],
) -> Instance:
    state, config, host = (_mapping(item.get(key)) for key in ("State", "Config", "HostConfig"))
    image_id = str(item.get("Image") or "")
    return Instance(
        id=str(item.get("Id", "")),
        name=str(item.get("Name", "")).lstrip("/"),
        state=str(state.get("Status", "unknown")),
        exit_code=_integer(state.get("ExitCode")),
        oom_killed=state.get("OOMKilled") is True,
        restart_count=_integer(item.get("RestartCount")),
        started_at=str(state.get("StartedAt") or ""),
        pid=_integer(state.get("Pid")),
        image=str(config.get("Image") or ""),
        image_id=image_id,
        repo_digests=digests.get(image_id, ()),
        labels=_labels(config.get("Labels")),
        argv=mask_argv(
            tuple(str(a) for a in [item.get("Path") or "", *_items(item.get("Args"))] if a)
        ),
        ports=_ports(item),
        gpu_request=_gpu_request(host, config),
        oci_runtime=str(host.get("Runtime") or ""),
        env=_own_env(config, image_env.get(image_id, {})),
    )


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _items(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else []


def _integer(value: Any) -> int:
    """Docker's numbers; anything else (a string, null, a float) reads as 0 or its int part."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float) and value == value and abs(value) < 2**63:
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return 0


def _labels(value: Any) -> dict[str, str]:
    """Labels as a mapping, or the `["key=value", ...]` list some tools write."""
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}
    pairs = (str(entry).partition("=") for entry in _items(value))
    return {key: val for key, _, val in pairs if key}


def _ports(item: dict[str, Any]) -> tuple[str, ...]:
    bound = _mapping(_mapping(item.get("NetworkSettings")).get("Ports"))
    ports = []
    for container_port, bindings in bound.items():
        for binding in (_mapping(b) for b in _items(bindings)):
            ports.append(
                f"{binding.get('HostIp', '')}:{binding.get('HostPort', '')}->{container_port}"
            )
    return tuple(sorted(ports))


def _gpu_request(host: dict[str, Any], config: dict[str, Any]) -> tuple[str, ...]:
    for request in (_mapping(r) for r in _items(host.get("DeviceRequests"))):
        capabilities = [c for caps in _items(request.get("Capabilities")) for c in _items(caps)]
        if "gpu" in capabilities:
            return tuple(str(i) for i in _items(request.get("DeviceIDs")))
    for entry in _items(config.get("Env")):
        name, _, value = str(entry).partition("=")
        if name == "NVIDIA_VISIBLE_DEVICES":
            return tuple(v for v in value.split(",") if v)
    return ()
