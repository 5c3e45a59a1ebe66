"""Offline rules over desired/: what must hold before anything is observed or planned.

`validate_fleet` runs after `load_fleet` and returns every problem at its file and line;
it never contacts a host. Each rule is one function, in the order the README lists them;
the rules on a seat's KV budget and speculative decoding are in `fleet.spec.seat_rules`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from fleet import secrets
from fleet.spec.client_rules import check_clients
from fleet.spec.images import parse_image
from fleet.spec.load import LoadedFleet, Sources
from fleet.spec.model_rules import check_model_origins
from fleet.spec.models import SECOND_COPY, ConcurrencyBand, DesiredFleet, ImagePolicy, Seat
from fleet.spec.monitoring import check_monitoring
from fleet.spec.problems import Problem, sort_problems
from fleet.spec.seat_rules import check_memory, check_speculative, seat_file
from fleet.spec.shapes import check_control_characters, check_shapes

Rule = Callable[[DesiredFleet, Sources], Iterator[Problem]]


def validate_fleet(loaded: LoadedFleet, more: tuple[Rule, ...] = ()) -> list[Problem]:
    """Every problem in desired/: load problems first, then each rule's, then secrets.

    `more` are rules from above this layer: `fleet.engines.rules.validate_fleet` passes
    each engine's own seat rules.
    """
    sources = loaded.sources
    problems = [*loaded.problems, *check_secrets(sources), *check_control_characters(sources)]
    if loaded.fleet is not None:
        for rule in (*RULES, *more):
            problems.extend(rule(loaded.fleet, loaded.sources))
    return sort_problems(problems)


def check_placement(desired: DesiredFleet, src: Sources) -> Iterator[Problem]:
    """Hosts exist, GPU indices exist there, (host, port) is unique, TP = number of GPUs."""
    for seat in sorted(desired.seats.values(), key=lambda s: s.name):
        rel = seat_file(seat)
        host = desired.hosts.get(seat.host)
        if host is None:
            yield src.problem(
                rel,
                ("host",),
                f"host {seat.host!r} is not in desired/hosts "
                f"(known: {', '.join(sorted(desired.hosts)) or 'none'})",
            )
        else:
            known = {gpu.index for gpu in host.gpus}
            for i, index in enumerate(seat.gpus):
                if index not in known:
                    yield src.problem(
                        rel,
                        ("gpus", i),
                        f"GPU {index} does not exist on host "
                        f"{host.name} (GPUs: {sorted(known) or 'none'})",
                    )
        if len(set(seat.gpus)) != len(seat.gpus):
            yield src.problem(rel, ("gpus",), "a GPU is listed twice")
        yield from _check_tensor_parallel(seat, src)
        yield from _check_second_copy_name(desired, seat, src)
    yield from _check_ports(desired, src)


def _check_second_copy_name(desired: DesiredFleet, seat: Seat, src: Sources) -> Iterator[Problem]:
    """A seat may not take the name a seat on its host has for its second copy in a surge
    (`chat-b` beside `chat`): the two would be one compose service, one unit."""
    first = desired.seats.get(seat.name.removesuffix(SECOND_COPY))
    if seat.name.endswith(SECOND_COPY) and first is not None and first.host == seat.host:
        yield src.problem(
            seat_file(seat),
            ("host",),
            f"seat name {seat.name!r} is what seat {first.name!r} on {seat.host} names its "
            "second copy while it surges; rename this seat",
        )


def _check_ports(desired: DesiredFleet, src: Sources) -> Iterator[Problem]:
    """Every seat's port and second (surge) port are its own on its host."""
    ports: dict[tuple[str, int], str] = {}
    seats = sorted(desired.seats.values(), key=lambda s: s.name)
    for seat in seats:  # the first ports first: their messages stay as they were
        other = ports.setdefault((seat.host, seat.port), seat.name)
        if other != seat.name:
            yield src.problem(
                seat_file(seat),
                ("port",),
                f"port {seat.port} on {seat.host} is already used by seat {other!r}",
            )
    for seat in seats:
        key = ("surge_port",) if seat.surge_port is not None else ("port",)
        second = seat.second_port
        where = f"surge port {second} on {seat.host}" + (
            "" if seat.surge_port is not None else " (port + 1000; set surge_port)"
        )
        if second > 65535:
            yield src.problem(seat_file(seat), key, f"{where} is above 65535")
            continue
        other = ports.setdefault((seat.host, second), seat.name)
        if other == seat.name and second == seat.port:
            yield src.problem(seat_file(seat), key, f"{where} is the seat's own port")
        elif other != seat.name:
            yield src.problem(seat_file(seat), key, f"{where} is already used by seat {other!r}")


def _check_tensor_parallel(seat: Seat, src: Sources) -> Iterator[Problem]:
    rel = seat_file(seat)
    if seat.tensor_parallel_size is not None and seat.tensor_parallel_size != len(seat.gpus):
        yield src.problem(
            rel,
            ("tensor_parallel_size",),
            f"tensor_parallel_size "
            f"{seat.tensor_parallel_size} must equal the number of GPUs "
            f"({len(seat.gpus)})",
        )


def check_aliases(desired: DesiredFleet, src: Sources) -> Iterator[Problem]:
    """Aliases unique; gateway params, fallbacks and retirements name real aliases."""
    owner: dict[str, str] = {}
    for seat in sorted(desired.seats.values(), key=lambda s: s.name):
        for i, alias in enumerate(seat.aliases):
            first = owner.setdefault(alias, seat.name)
            if first != seat.name or seat.aliases.index(alias) != i:
                yield src.problem(
                    seat_file(seat),
                    ("aliases", i),
                    f"alias {alias!r} is already routed to seat {first!r}",
                )
    gateway = desired.gateway
    if gateway is None:
        return
    if gateway.host not in desired.hosts:
        yield src.problem(
            "gateway.yaml", ("host",), f"host {gateway.host!r} is not in desired/hosts"
        )
    for key, alias in gateway.settings.named_aliases():
        if alias not in owner:
            yield src.problem("gateway.yaml", (key, alias), f"{key} names unknown alias {alias!r}")
    for alias, targets in gateway.fallbacks.items():
        for name in (alias, *targets):
            if name not in owner:
                yield src.problem(
                    "gateway.yaml", ("fallbacks", alias), f"fallbacks name unknown alias {name!r}"
                )
    for i, alias in enumerate(gateway.retired_aliases):
        if alias in owner:
            yield src.problem(
                "gateway.yaml",
                ("retired_aliases", i),
                f"alias {alias!r} is retired but still routed to seat {owner[alias]!r}",
            )


def image_problems(seat: Seat, policy: ImagePolicy, src: Sources) -> Iterator[Problem]:
    """A container image's rules: untagged or floating tags are errors; a tag without
    digest follows the policy. The host's runtime applies them where its seats run images
    (`Runtime.check_image`, run by `fleet.runtimes.validate_fleet`)."""
    ref = parse_image(seat.image)
    rel, loc = seat_file(seat), ("image",)
    if ref.tag is None and ref.digest is None:
        yield src.problem(rel, loc, f"image {seat.image!r} has no tag: pin a version")
    elif ref.tag in policy.floating_tags:
        yield src.problem(
            rel, loc, f"image tag {ref.tag!r} floats: pin a version (and ideally a digest)"
        )
    elif ref.digest is None and policy.digest != "ignore":
        yield src.problem(
            rel,
            loc,
            f"image {seat.image!r} has no @sha256 digest: a re-push of the tag changes what runs",
            warning=policy.digest == "warn",
        )


def check_ranges(desired: DesiredFleet, src: Sources) -> Iterator[Problem]:
    """Concurrency bands have 0 < min <= max; contexts are positive."""
    yield from _check_band(desired.settings.concurrency_band, "fleet.yaml", src)
    for seat in sorted(desired.seats.values(), key=lambda s: s.name):
        if seat.concurrency_band is not None:
            yield from _check_band(seat.concurrency_band, seat_file(seat), src)
        if seat.context <= 0:
            yield src.problem(
                seat_file(seat), ("context",), f"context must be positive, got {seat.context}"
            )


def _check_band(band: ConcurrencyBand, rel: str, src: Sources) -> Iterator[Problem]:
    loc = ("concurrency_band",)
    if band.min <= 0 or band.max <= 0:
        yield src.problem(
            rel, loc, f"concurrency band must be positive, got {band.min}..{band.max}"
        )
    elif band.min > band.max:
        yield src.problem(rel, loc, f"concurrency band min {band.min} is above max {band.max}")


def check_secrets(src: Sources) -> Iterator[Problem]:
    """Literal secrets anywhere in desired/ are errors; their values are never printed."""
    for rel, tree in sorted(src.trees.items()):
        for loc in secrets.find_secret_keys(tree):
            yield src.problem(
                rel,
                loc,
                f"{loc[-1]!r} holds a literal value: secrets never "
                "live in desired/; write ${ENV_VAR} and set it at apply time",
            )
        for loc, kind in secrets.find_secret_values(tree):
            where = ".".join(str(p) for p in loc)
            yield src.problem(
                rel,
                loc,
                f"{where} holds {kind}: secrets never live in desired/; "
                "write ${ENV_VAR} and set it at apply time",
            )
    for rel, text in sorted(src.texts.items()):
        for line, kind in secrets.find_key_shapes(text):
            yield Problem(
                path=src.display(rel),
                line=line,
                message=f"this line holds what "
                f"looks like {kind}: move it to an environment variable and write "
                "${ENV_VAR}",
            )


def check_argv_references(desired: DesiredFleet, src: Sources) -> Iterator[Problem]:
    """No `${VAR}` in a seat's `extra_args`: an engine's argv is no place for a secret
    (`ps` shows it to every user of the host, the container runtime to whoever may
    inspect it) and a systemd unit would pass the text `${VAR}` itself."""
    for seat in sorted(desired.seats.values(), key=lambda s: s.name):
        for index, arg in enumerate(seat.extra_args):
            if secrets.INTERPOLATION.search(arg):
                yield src.problem(
                    seat_file(seat),
                    ("extra_args", index),
                    f"extra_args[{index}] interpolates an environment variable: the argv "
                    "of an engine is visible to every user of its host; put it in env: "
                    "(e.g. VLLM_API_KEY: ${VAR}, written to the seat's 0600 env file) "
                    "and let the engine read it from there",
                )


RULES: tuple[Rule, ...] = (
    check_argv_references,
    check_placement,
    check_aliases,
    check_memory,
    check_speculative,
    check_ranges,
    check_model_origins,
    check_shapes,
    check_clients,
    check_monitoring,
)
