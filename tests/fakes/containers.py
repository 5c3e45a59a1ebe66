"""The containers of a fake host, and what the fact script would print about them.

`FakeHost` (tests.fakes.host) creates a `FakeContainer` from a compose service when a test's
apply runs `docker compose ... up -d --no-deps SERVICE`. `fact_output` prints the
`@@FLEET <section> <arg>` text the fact script prints on a real host (nvidia-smi lines,
cgroups, `docker inspect` JSON, engine logs, the lock and the journal), so observe's real
parser (`fleet.observed.assemble`) and the health gate read the fake as they read a host.
A running vLLM container logs a KV cache of 1.5x its --max-model-len. Its process runs
with the container's argv, but for a flag `dropped` (and that flag's value).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fleet.facts.script import MARK
from fleet.names import JOURNAL_NAME, LOCK_NAME, SEAT_LABEL

GPU_MIB = 97887
ENGINE_MIB = 20480  # what a running engine holds on each of its GPUs


@dataclass
class FakeContainer:
    """One container a compose `up` created from a service definition."""

    id: str
    name: str
    service: str
    definition: dict[str, Any]
    pid: int
    state: str = "running"
    exit_code: int = 0
    oom_killed: bool = False  # docker's State.OOMKilled
    log: str = ""
    dropped: str | None = None  # a flag the process lost on its way to the engine

    @property
    def argv(self) -> list[str]:
        """The process docker starts: entrypoint + command, compose's `$$` unescaped."""
        words = [
            *(self.definition.get("entrypoint") or []),
            *(self.definition.get("command") or []),
        ]
        return [str(w).replace("$$", "$") for w in words]

    @property
    def process_argv(self) -> list[str]:
        """What /proc/<pid>/cmdline shows: the argv without the dropped flag and its value."""
        argv = self.argv
        if self.dropped in argv:
            at = argv.index(self.dropped)
            valued = at + 1 < len(argv) and not argv[at + 1].startswith("-")
            del argv[at : at + (2 if valued else 1)]
        return argv

    @property
    def labels(self) -> dict[str, str]:
        """The container's labels."""
        return {str(k): str(v) for k, v in (self.definition.get("labels") or {}).items()}

    @property
    def gpus(self) -> list[int]:
        """GPU indices the container was given (device_ids, or NVIDIA_VISIBLE_DEVICES)."""
        reservations = (self.definition.get("deploy") or {}).get("resources") or {}
        for device in (reservations.get("reservations") or {}).get("devices") or []:
            return [int(i) for i in device.get("device_ids") or []]
        visible = str(self.environment().get("NVIDIA_VISIBLE_DEVICES", ""))
        return [int(i) for i in visible.split(",") if i.isdigit()]

    @property
    def ports(self) -> list[tuple[str, int, int]]:
        """(host address, host port, container port) of each published port."""
        found = []
        for spec in self.definition.get("ports") or []:
            address, host_port, container_port = str(spec).rsplit(":", 2)
            found.append((address, int(host_port), int(container_port)))
        return found

    @property
    def running(self) -> bool:
        """True while the container runs."""
        return self.state == "running"

    def environment(self) -> dict[str, str]:
        """The service's environment as a mapping."""
        env = self.definition.get("environment") or {}
        if isinstance(env, list):
            return dict(str(e).partition("=")[::2] for e in env)
        return {str(k): str(v) for k, v in env.items()}

    def inspect(self) -> dict[str, Any]:
        """What `docker inspect` prints for it."""
        argv = self.argv
        host_config: dict[str, Any] = {"Runtime": str(self.definition.get("runtime") or "runc")}
        if "deploy" in self.definition:
            ids = [str(g) for g in self.gpus]
            host_config["DeviceRequests"] = [
                {"Driver": "nvidia", "DeviceIDs": ids, "Capabilities": [["gpu"]]}
            ]
        return {
            "Id": self.id,
            "Name": f"/{self.name}",
            "Path": argv[0] if argv else "",
            "Args": argv[1:],
            "State": {
                "Status": self.state,
                "Running": self.running,
                "Pid": self.pid if self.running else 0,
                "ExitCode": self.exit_code,
                "OOMKilled": self.oom_killed,
                "StartedAt": "2026-12-01T10:00:00.000Z",
            },
            "RestartCount": 0,
            "Image": "sha256:" + "c" * 64,
            "Config": {
                "Image": str(self.definition.get("image") or ""),
                "Labels": self.labels,
                "Env": [f"{k}={v}" for k, v in sorted(self.environment().items())],
            },
            "HostConfig": host_config,
            "NetworkSettings": {
                "Ports": {f"{c}/tcp": [{"HostIp": a, "HostPort": str(p)}] for a, p, c in self.ports}
            },
        }

    def ps_ports(self) -> str:
        """The `{{.Ports}}` column of `docker ps`."""
        return ", ".join(f"{a}:{p}->{c}/tcp" for a, p, c in self.ports)

    def seat(self) -> str | None:
        """The fleet seat the container serves (its label)."""
        return self.labels.get(SEAT_LABEL)


def gpu_uuid(index: int) -> str:
    """The UUID nvidia-smi reports for a fake GPU."""
    return f"GPU-fake0000-0000-0000-0000-{index:012d}"


def fact_output(
    containers: Mapping[str, FakeContainer],
    gpu_count: int,
    files: Mapping[str, str],
    missing: Iterable[str] = (),
    processes: Sequence[tuple[int, int, str]] = (),
    sections: Sequence[str] = (),
    ggufs: Mapping[str, tuple[int, bytes]] = {},
    docker: bool = True,
    mark: str = MARK,
) -> str:
    """The fact script's output for a host with these containers, GPUs and files, where
    the `missing` paths do not exist; `processes` are other engines' GPU processes (pid,
    GPU, cgroup path: a systemd unit's), `sections` other runtimes' parts and `ggufs` the
    GGUF files there are (path -> size, head of the file); a host without `docker` prints
    nothing of it, as the fact script skips a command the host does not have; `mark`
    starts each section (the script's boundary)."""
    running = [c for c in containers.values() if c.running]
    on_gpu = [gpu for c in running for gpu in c.gpus] + [gpu for _, gpu, _ in processes]
    used = {i: ENGINE_MIB * on_gpu.count(i) for i in range(gpu_count)}
    parts = [f"{mark}gpus"]
    parts += [
        f"{i}, {gpu_uuid(i)}, NVIDIA FAKE GPU, {GPU_MIB}, {used[i]}" for i in range(gpu_count)
    ]
    parts += [f"{mark}gpus-rc 0", f"{mark}apps"]
    workers = [(c.pid + n, gpu, c) for c in running for n, gpu in enumerate(c.gpus)]
    parts += [f"{pid}, {gpu_uuid(gpu)}, {ENGINE_MIB}" for pid, gpu, _ in workers]
    parts += [f"{pid}, {gpu_uuid(gpu)}, {ENGINE_MIB}" for pid, gpu, _ in processes]
    for pid, _, container in workers:
        parts += [f"{mark}cgroup {pid}", f"0::/system.slice/docker-{container.id}.scope"]
    for pid, _, cgroup in processes:
        parts += [f"{mark}cgroup {pid}", f"0::{cgroup}"]
    parts += [*([f"{mark}docker-rc 0"] if docker else []), *sections]
    if containers:
        images = [{"Id": "sha256:" + "c" * 64, "RepoDigests": []}]
        inspected = [c.inspect() for c in containers.values()]
        parts += [f"{mark}inspect", json.dumps(inspected), f"{mark}images", json.dumps(images)]
        for container in containers.values():
            if container.running:
                argv = "".join(f"{arg}\0" for arg in container.process_argv)
                parts += [f"{mark}cmdline {container.id}", argv]
            parts += [f"{mark}logs {container.id}", container.log]
    parts += [f"{mark}missing {path}" for path in sorted(missing)]
    if "/proc/meminfo" in files:
        parts += [f"{mark}meminfo", files["/proc/meminfo"]]
    for path, (size, head) in sorted(ggufs.items()):
        parts += [f"{mark}gguf {path}", str(size), base64.b64encode(head).decode()]
    for path, text in sorted(files.items()):
        kind = {LOCK_NAME: "lock", JOURNAL_NAME: "journal"}.get(path.rsplit("/", 1)[-1])
        if kind:
            parts += [f"{mark}{kind}", text]
    parts.append(f"{mark}end")
    return "\n".join(parts) + "\n"
