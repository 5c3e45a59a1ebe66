"""The `Runtime` protocol: what fleet asks of a host about the seats it runs.

A runtime is how a host runs its seats (docker compose, systemd units). Its module in
`fleet/runtimes/` is pure: it declares the facts the host's fact script gathers
about seats, reads what they printed into `SeatInstances`, maps an engine process to the
instance it belongs to, and renders a seat's definition (with its spec hash). What runs
on the host (upload, start, stop, replace, read a log, restart) is its adapter's, in
`reconciler/runtimes/`. Observe, plan, the health gate and apply ask the host's runtime
(`fleet.runtimes.runtime_for(host.runtime)`) instead of naming Docker.

`RuntimeBase` supplies the defaults (a runtime that runs one copy of a seat, reports no
restarts, takes any `image`, reads the spec hash off a definition's labels), so a runtime
is a subclass that states only what is its own; capabilities are declared there (`SURGES`,
`REPORTS_RESTARTS`), never probed. `fleet.runtimes.register` adds one.

Called by `fleet.observed.assemble` (reading), `fleet.plan.diff` (rendering, for the spec
hash), import (`fleet.render`) and the reconciler (fact scripts, adapters).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

from pydantic import Field

from fleet.base import CoreModel
from fleet.facts.instance import Instance
from fleet.facts.script import FactOutput
from fleet.names import HASH_LABEL
from fleet.spec.host_settings import RuntimeSettings
from fleet.spec.load import Sources
from fleet.spec.models import DesiredFleet, Host, ImagePolicy, Seat
from fleet.spec.problems import Problem


class SeatInstances(CoreModel):
    """What a host's runtime reports of the seats it runs, from one fact script.

    `instances` are neutral whatever the runtime: a compose runtime reports containers, a
    systemd runtime units (state, main pid, labels from the unit's own fields), each with
    the argv its engine process runs (read from /proc where it could be) and its log since
    its last start.
    """

    instances: tuple[Instance, ...] = ()
    logs: dict[str, str] = Field(default_factory=dict, description="by instance id")
    definitions: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="each seat as fleet last wrote it on the host"
    )
    error: str | None = Field(None, description="the runtime did not answer (why)")


ImportLine = tuple[str, object, str]
"""One line of an imported host file: the key, its value, and where the value came from."""


class Runtime(Protocol):
    """One host runtime. `NAME` is what `runtime:` in desired/hosts/<host>.yaml says;
    `DEFINITION` names a seat's definition in a plan (`compose definition: a -> b`);
    `RESTORED` what a rollback puts back on a host (`compose file on HOST`); `MANAGED_BY`
    what a seat fleet runs is under, as plan says of an adopted hand-made one;
    `SURGES` whether it runs a seat's second copy `<seat>-b` on its second port
    (`DesiredFleet.instance_name`) beside the first; where not, its seats recreate and
    `strategy: surge` is a blocker. `REPORTS_RESTARTS`: an instance's restart count means
    the runtime restarted a dead engine (a finding says so, `RESTARTED_BY` who did);
    `IMAGE_SOURCE` where import read a seat's `image` from. `SETTINGS` is the model of
    the keys of a host file that are the runtime's own (`fleet.spec.host_settings`).
    `INSTANCE` is what a seat's `fleet.facts.instance.Instance` is on this runtime, in a
    word (`container`, `unit`): `ObservedSeat.instance` on its hosts."""

    NAME: str
    SETTINGS: type[RuntimeSettings]
    INSTANCE: str
    DEFINITION: str
    RESTORED: str
    MANAGED_BY: str
    SURGES: bool
    REPORTS_RESTARTS: bool
    RESTARTED_BY: str
    IMAGE_SOURCE: str

    def check_image(self, seat: Seat, policy: ImagePolicy, src: Sources) -> Iterator[Problem]:
        """Offline rules on a seat's `image` as this runtime runs it (a container image's
        tag and digest, an executable's path)."""
        ...

    def host_facts(self, host: Host) -> tuple[str, ...]:
        """The fact-script entries (`Fact.entry`) about every seat instance on the host and
        the definitions fleet wrote there."""
        ...

    def seat_facts(self, host: Host, seat: str) -> tuple[str, ...]:
        """Only the entries the health gate reads about one seat's instance."""
        ...

    def read_seats(self, output: FactOutput) -> SeatInstances:
        """The instances, logs and definitions those entries printed, read by their facts."""
        ...

    def owner(self, cgroup: str) -> str | None:
        """The instance id a process belongs to, from its /proc/<pid>/cgroup; None if none."""
        ...

    def render_seat(self, seat: Seat, host: Host) -> dict[str, Any]:
        """A seat's definition as apply writes it, carrying its spec hash."""
        ...

    def spec_hash(self, definition: dict[str, Any]) -> str | None:
        """The spec hash a rendered definition carries."""
        ...

    def render_host(self, desired: DesiredFleet, host_name: str) -> str:
        """Everything the runtime writes for a host's seats (`fleet render HOST`)."""
        ...

    def import_lines(self, instances: tuple[Instance, ...]) -> list[ImportLine]:
        """What `fleet import` writes of the runtime in a host file, from the instances
        seen there (`runtime:` and the runtime's own settings)."""
        ...


class RuntimeBase:
    """The defaults of a runtime (see `Runtime`): a subclass gives its names, facts and
    rendering, and inherits these."""

    NAME: str
    SETTINGS: type[RuntimeSettings] = RuntimeSettings
    INSTANCE: str = "instance"
    SURGES: bool = False
    REPORTS_RESTARTS: bool = False
    RESTARTED_BY: str = "the runtime"
    IMAGE_SOURCE: str = "the instance's image"

    def check_image(self, seat: Seat, policy: ImagePolicy, src: Sources) -> Iterator[Problem]:
        """No rule on `image`."""
        return iter(())

    def spec_hash(self, definition: dict[str, Any]) -> str | None:
        """The spec hash label of a definition that carries fleet's labels."""
        labels = definition.get("labels")
        return labels.get(HASH_LABEL) if isinstance(labels, dict) else None

    def import_lines(self, instances: tuple[Instance, ...]) -> list[ImportLine]:
        """`runtime: <NAME>`, as the host runs its engines."""
        return [("runtime", self.NAME, f"the engines run under {self.NAME}")]
