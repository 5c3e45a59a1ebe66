"""Host runtimes: how a host runs its seats, one module each (docker compose, systemd units).

A host names its runtime in desired/hosts/<host>.yaml (`runtime: compose`, the default).
The protocol is `fleet.runtimes.base.Runtime`:

- `NAME`, `SETTINGS` (the model of a host file's keys that are the runtime's own,
  `fleet.spec.host_settings`), and `DEFINITION`: what plan calls a seat's definition
  (`compose definition`), `RESTORED`: what a rollback says it put back, `MANAGED_BY`: what
  fleet's seats are under; the capabilities it declares: `SURGES` (it runs a seat's second
  copy `<seat>-b` beside the first), `REPORTS_RESTARTS` (who restarted a dead engine);
- `check_image(seat, policy, src)`: the offline rules on a seat's `image` (a container
  image's tag and digest; a unit's executable path), run by `validate_fleet` here beside
  the spec's and the engines' rules;
- `host_facts(host)` / `seat_facts(host, seat)`: the fact-script entries (`Fact.entry` of the
  runtime's own `fleet.facts.script.Fact`s) about the seats the host runs, and about one
  seat for the health gate;
- `read_seats(output)` -> `SeatInstances`: each seat's instance (`Instance`: state,
  pid, labels, live argv), its log since its last start, the definitions fleet wrote there,
  or why the runtime did not answer;
- `owner(cgroup)`: the instance a GPU process belongs to, from /proc/<pid>/cgroup;
- `render_seat(seat, host)` (a definition carrying the spec hash), `spec_hash(definition)`
  and `render_host(desired, host)` (what `fleet render HOST` prints);
- `import_lines(instances)`: what `fleet import` writes of it in a host file.

A runtime is pure, a `fleet.runtimes.base.RuntimeBase` subclass (`fleet/runtimes/<name>.py`)
added by `register` (the built-in ones are registered below); what it does on a host
(write a definition, start, stop, replace, remove, restart, read a log, find a port) is
its adapter, `reconciler/runtimes/<name>.py` (`reconciler.runtimes.base.RuntimeAdapter`,
added by `reconciler.runtimes.register`).

The fact scripts' modules are imported by `host_script` and `seat_script` when called:
`fleet validate` needs the runtimes' rules, not their facts, and every module imported
costs each start of the command line (`bench/startup_bench.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from fleet.engines import validate_fleet as validate_engines
from fleet.runtimes.base import Runtime, SeatInstances
from fleet.runtimes.compose import COMPOSE
from fleet.runtimes.systemd import SYSTEMD
from fleet.spec.host_settings import RUNTIME_SETTINGS, register_settings
from fleet.spec.load import LoadedFleet, Sources
from fleet.spec.models import DesiredFleet, Host
from fleet.spec.problems import Problem

RUNTIMES: dict[str, Runtime] = {}
"""Every runtime a host's `runtime:` may name, by name (filled by `register`)."""


def register(runtime: Runtime) -> None:
    """Make a runtime known by its NAME: its host files' own keys are read by its
    `SETTINGS`, and observe, plan, apply and import reach it through `runtime_for`."""
    RUNTIMES[runtime.NAME] = runtime
    register_settings(runtime.NAME, runtime.SETTINGS)


def unregister(name: str) -> None:
    """Forget a runtime `register` added (a test's own, once it is done)."""
    RUNTIMES.pop(name, None)
    RUNTIME_SETTINGS.pop(name, None)


register(COMPOSE)
register(SYSTEMD)

__all__ = [
    "RUNTIMES",
    "Runtime",
    "SeatInstances",
    "host_script",
    "register",
    "runtime_for",
    "seat_script",
    "unregister",
    "validate_fleet",
]


def runtime_for(host: Host | str) -> Runtime:
    """The runtime a host (or a runtime name) names; validation made sure it exists."""
    return RUNTIMES[host if isinstance(host, str) else host.runtime]


def host_script(
    host: Host,
    model_paths: Iterable[str],
    sources: Mapping[str, tuple[str, str]] | None = None,
    boundary: str = "",
    metrics_ports: Iterable[int] = (),
) -> str:
    """The fact script of a host: its GPUs, what its runtime reports of its seats, its
    models (and the sources of those a fetch would fill), its apply lock and journal
    (one round trip); its sections carry the run's `boundary` (`fleet.facts.script`).
    With `metrics_ports` (`fleet status`) it also reads the engines' /metrics there."""
    from fleet.facts.gpu_facts import GPU_PROCESSES, GPUS
    from fleet.facts.host_facts import host_entries
    from fleet.facts.script import script
    from fleet.facts.seat_metrics import SEAT_METRICS, metrics_address

    ports = sorted(set(metrics_ports))
    metrics = (SEAT_METRICS.entry(metrics_address(host.publish_address), ports),) if ports else ()
    return script(
        (
            GPUS.entry(),
            GPU_PROCESSES.entry(),
            *runtime_for(host).host_facts(host),
            *host_entries(host.models_root, list(model_paths), host.apply_state_dir, sources),
            *metrics,
        ),
        boundary,
    )


def seat_script(host: Host, seat: str, boundary: str = "") -> str:
    """What the health gate reads about one seat on its host (one round trip)."""
    from fleet.facts.gpu_facts import GPU_PROCESSES, GPUS
    from fleet.facts.script import script

    entries = (GPUS.entry(), GPU_PROCESSES.entry(), *runtime_for(host).seat_facts(host, seat))
    return script(entries, boundary)


def check_images(desired: DesiredFleet, src: Sources) -> Iterator[Problem]:
    """Each seat's `image` as its host's runtime runs it (none where the host is not known:
    placement names that problem)."""
    policy = desired.settings.images
    for seat in sorted(desired.seats.values(), key=lambda s: s.name):
        host = desired.hosts.get(seat.host)
        if host is not None and host.runtime in RUNTIMES:
            yield from runtime_for(host).check_image(seat, policy, src)


def validate_fleet(loaded: LoadedFleet) -> list[Problem]:
    """Every problem in desired/: the spec's rules, each engine's and each host runtime's
    (what the commands run)."""
    return validate_engines(loaded, (check_images,))
