"""The lab's stand-in for the NVIDIA container toolkit: an OCI runtime wrapper.

Each host's dockerd finds this as `runc` on its PATH (for `deploy.resources.reservations
.devices`, where dockerd itself adds the `nvidia-container-runtime-hook` prestart hook
and NVIDIA_VISIBLE_DEVICES) and as the registered runtime `nvidia` (for `runtime: nvidia`
plus NVIDIA_VISIBLE_DEVICES in the environment, as nvidia-container-runtime does).
On `create` it hands the selected GPUs to the container: a bind mount of the host's GPU
directory at /run/fleet-lab-gpu and FLEET_LAB_GPUS / FLEET_LAB_CONTAINER_ID in the
process environment. On `delete` it frees what the container's engines had recorded.
Everything else goes to the real runc unchanged.

usage: gpu_runtime.py --mode runc|nvidia --gpu-dir DIR --runc REAL -- RUNC-ARGS...
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

MOUNT_POINT = "/run/fleet-lab-gpu"
HOOK = "nvidia-container-runtime-hook"


class DeviceError(Exception):
    """NVIDIA_VISIBLE_DEVICES names a GPU this host does not have."""


def visible_devices(env: list[str]) -> str | None:
    """The last NVIDIA_VISIBLE_DEVICES value in an OCI env list."""
    values = [e.split("=", 1)[1] for e in env if e.startswith("NVIDIA_VISIBLE_DEVICES=")]
    return values[-1] if values else None


def select(spec_value: str, gpus: list[dict]) -> list[int]:
    """Physical indices for 'all', '0,1' or GPU UUIDs; [] for none/void."""
    if spec_value in ("", "none", "void"):
        return []
    if spec_value == "all":
        return [g["index"] for g in gpus]
    by_key = {str(g["index"]): g["index"] for g in gpus} | {g["uuid"]: g["index"] for g in gpus}
    picked = []
    for item in spec_value.split(","):
        if item.strip() not in by_key:
            raise DeviceError(f"nvidia-container-cli: device error: {item.strip()}: unknown device")
        picked.append(by_key[item.strip()])
    return picked


def wants_gpus(spec: dict, mode: str) -> str | None:
    """The device selection of a container, or None if it was handed no GPU."""
    env = spec.get("process", {}).get("env", [])
    if mode == "runc":
        hooks = spec.get("hooks", {}).get("prestart", [])
        if not any(Path(h.get("path", "")).name == HOOK for h in hooks):
            return None
    return visible_devices(env)


def hand_over(bundle: Path, container: str, gpu_dir: Path, mode: str) -> None:
    """Patch the bundle's config.json so the container sees its GPUs."""
    config = bundle / "config.json"
    spec = json.loads(config.read_text())
    selection = wants_gpus(spec, mode)
    if selection is None:
        return
    indices = select(selection, json.loads((gpu_dir / "gpus.json").read_text()))
    if not indices:
        return
    spec.setdefault("mounts", []).append(
        {
            "destination": MOUNT_POINT,
            "type": "bind",
            "source": str(gpu_dir),
            "options": ["rbind", "rw"],
        }
    )
    spec["process"]["env"] += [
        f"FLEET_LAB_GPUS={','.join(map(str, indices))}",
        f"FLEET_LAB_CONTAINER_ID={container}",
    ]
    config.write_text(json.dumps(spec))


def free_memory_of(container: str, gpu_dir: Path) -> None:
    """The container is gone: drop its engines' usage records."""
    for path in (gpu_dir / "usage").glob(f"{container}-*.json"):
        path.unlink(missing_ok=True)


def option(args: list[str], *names: str) -> str | None:
    """The value after `--bundle` / `-b` (or `--bundle=...`) in runc's arguments."""
    for i, arg in enumerate(args):
        if arg in names and i + 1 < len(args):
            return args[i + 1]
        for name in names:
            if arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return None


def main(argv: list[str]) -> int:
    """Adjust the container for its GPUs, then exec the real runc."""
    split = argv.index("--")
    ours, runc_args = argv[:split], argv[split + 1 :]
    mode, gpu_dir, real = (
        option(ours, "--mode"),
        Path(option(ours, "--gpu-dir") or ""),
        option(ours, "--runc"),
    )
    command = next((a for a in runc_args if a in ("create", "run", "delete")), None)
    try:
        if command in ("create", "run"):
            hand_over(
                Path(option(runc_args, "--bundle", "-b") or "."), runc_args[-1], gpu_dir, mode or ""
            )
        elif command == "delete":
            free_memory_of(runc_args[-1], gpu_dir)
    except DeviceError as err:
        print(err, file=sys.stderr)
        return 1
    os.execv(real or "/usr/sbin/runc", [real or "runc", *runc_args])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
