"""Compose files for the lab's own tests: stand-in engine seats as production writes them.

`seat(...)` builds one service (GPU hand-over by device reservation or by the nvidia
runtime, ports on the host's address, /models mounted, a curl healthcheck) and
`compose_text(...)` the file (JSON, which is valid YAML for compose).
"""

from __future__ import annotations

import json
from typing import Any


def gpu_handover(gpus: list[int], handover: str) -> dict[str, Any]:
    """The compose keys that hand GPUs to a service, as production files do."""
    if handover == "runtime":
        return {
            "runtime": "nvidia",
            "environment": {"NVIDIA_VISIBLE_DEVICES": ",".join(map(str, gpus))},
        }
    device = {"driver": "nvidia", "device_ids": [str(g) for g in gpus], "capabilities": ["gpu"]}
    return {"deploy": {"resources": {"reservations": {"devices": [device]}}}}


def seat(
    *,
    address: str,
    model: str,
    served: str,
    port: int,
    gpus: list[int],
    handover: str = "device_requests",
    image: str = "vllm/vllm-openai:v0.18.0",
    args: list[str] | None = None,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """One stand-in engine service."""
    service: dict[str, Any] = {
        "image": image,
        "command": [
            f"/models/{model}",
            "--served-model-name",
            served,
            "--port",
            str(port),
            *(args or []),
        ],
        "ports": [f"{address}:{port}:{port}"],
        "volumes": ["/models:/models:ro"],
        "ipc": "host",
        "healthcheck": {
            "test": ["CMD", "curl", "-fsS", f"http://localhost:{port}/health"],
            "interval": "1s",
            "timeout": "5s",
            "retries": 120,
        },
    }
    handed = gpu_handover(gpus, handover)
    environment = {**handed.pop("environment", {}), **(env or {})}
    if environment:
        service["environment"] = environment
    return {**service, **handed}


def compose_text(services: dict[str, dict[str, Any]]) -> str:
    """A compose file with the given services."""
    return json.dumps({"services": services}, indent=2) + "\n"
