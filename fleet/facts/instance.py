"""One seat instance on a host, whatever runs it: the neutral model of every runtime.

A compose host reports its containers (`fleet.facts.docker_inspect`), a systemd host its
units (`fleet.runtimes.systemd`), each as an `Instance` in `fleet.runtimes.base.SeatInstances`:
its id and name, state, restarts, main pid, image (a container image, or the executable a
unit starts), labels, the engine's argv, published ports, requested GPUs and environment
(secret values already `${NAME}`). Every field means one thing on every runtime; what only
a container has (`oci_runtime`) is empty elsewhere.
"""

from pydantic import Field

from fleet.base import CoreModel


class Instance(CoreModel):
    """One instance of a seat as its host's runtime reports it (a container, a unit)."""

    id: str
    name: str
    state: str = Field(description="created, running, restarting, exited, paused or dead")
    exit_code: int = 0
    oom_killed: bool = Field(False, description="the kernel's OOM killer ended it")
    restart_count: int = 0
    started_at: str = ""
    pid: int = 0
    image: str = Field(description="The container's image reference, or the unit's executable.")
    image_id: str = ""
    repo_digests: tuple[str, ...] = ()
    labels: dict[str, str] = Field(default_factory=dict)
    argv: tuple[str, ...] = Field((), description="The argv of the engine process it runs.")
    ports: tuple[str, ...] = Field((), description="host_ip:host_port->container_port/proto")
    gpu_request: tuple[str, ...] = Field((), description="GPU ids from DeviceRequests or env")
    env: dict[str, str] = Field(
        default_factory=dict,
        description="environment beyond the image's own, secret-looking values as ${NAME}",
    )
    oci_runtime: str = Field(
        "", description="The OCI runtime a container runs under (runc, nvidia); else empty."
    )

    @property
    def running(self) -> bool:
        """True while the instance runs."""
        return self.state == "running"
