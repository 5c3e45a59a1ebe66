"""Offline rules over desired/: what must hold before anything is observed or planned.

`validate_fleet` runs after `load_fleet` and returns every problem at its file and line;
it never contacts a host. Each rule is one function, in the order the README lists them.
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from collections.abc import Callable, Iterator

from fleet import secrets
from fleet.spec import speculative
from fleet.spec.images import parse_image
from fleet.spec.load import LoadedFleet, Sources
from fleet.spec.models import ConcurrencyBand, DesiredFleet, Seat
from fleet.spec.problems import Problem, sort_problems
from fleet.units import format_bytes

Rule = Callable[[DesiredFleet, Sources], Iterator[Problem]]


def validate_fleet(loaded: LoadedFleet) -> list[Problem]:
    """Every problem in desired/: load problems first, then each rule's, then secrets."""
    problems = list(loaded.problems) + list(check_secrets(loaded.sources))
    if loaded.fleet is not None:
        for rule in RULES:
            problems.extend(rule(loaded.fleet, loaded.sources))
    return sort_problems(problems)


def _seat_file(seat: Seat) -> str:
    return f"seats/{seat.name}.yaml"


def check_placement(desired: DesiredFleet, src: Sources) -> Iterator[Problem]:
    """Hosts exist, GPU indices exist there, (host, port) is unique, TP = number of GPUs."""
    ports: dict[tuple[str, int], str] = {}
    for seat in sorted(desired.seats.values(), key=lambda s: s.name):
        rel = _seat_file(seat)
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
        if not seat.gpus and seat.engine != "llama.cpp":
            yield src.problem(
                rel,
                ("gpus",),
                f"a {seat.engine} seat needs at least one GPU (only llama.cpp runs on the CPU)",
            )
        if len(set(seat.gpus)) != len(seat.gpus):
            yield src.problem(rel, ("gpus",), "a GPU is listed twice")
        other = ports.setdefault((seat.host, seat.port), seat.name)
        if other != seat.name:
            yield src.problem(
                rel, ("port",), f"port {seat.port} on {seat.host} is already used by seat {other!r}"
            )
        yield from _check_tensor_parallel(seat, src)


def _check_tensor_parallel(seat: Seat, src: Sources) -> Iterator[Problem]:
    rel = _seat_file(seat)
    if seat.tensor_parallel_size is not None and seat.tensor_parallel_size != len(seat.gpus):
        yield src.problem(
            rel,
            ("tensor_parallel_size",),
            f"tensor_parallel_size "
            f"{seat.tensor_parallel_size} must equal the number of GPUs "
            f"({len(seat.gpus)})",
        )
    for flag in ("--tensor-parallel-size", "-tp"):
        if any(arg == flag or arg.startswith(flag + "=") for arg in seat.extra_args):
            yield src.problem(
                rel, ("extra_args",), f"{flag} is implied by gpus; remove it from extra_args"
            )


def check_aliases(desired: DesiredFleet, src: Sources) -> Iterator[Problem]:
    """Aliases unique; gateway params, fallbacks and retirements name real aliases."""
    owner: dict[str, str] = {}
    for seat in sorted(desired.seats.values(), key=lambda s: s.name):
        for i, alias in enumerate(seat.aliases):
            first = owner.setdefault(alias, seat.name)
            if first != seat.name or seat.aliases.index(alias) != i:
                yield src.problem(
                    _seat_file(seat),
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
    for alias in gateway.alias_params:
        if alias not in owner:
            yield src.problem(
                "gateway.yaml",
                ("alias_params", alias),
                f"alias_params names unknown alias {alias!r}",
            )
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


def check_images(desired: DesiredFleet, src: Sources) -> Iterator[Problem]:
    """Untagged or floating tags are errors; a tag without digest follows the policy."""
    policy = desired.settings.images
    for seat in sorted(desired.seats.values(), key=lambda s: s.name):
        ref = parse_image(seat.image)
        rel, loc = _seat_file(seat), ("image",)
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
                f"image {seat.image!r} has no @sha256 digest: a "
                "re-push of the tag changes what runs",
                warning=policy.digest == "warn",
            )


def check_memory(desired: DesiredFleet, src: Sources) -> Iterator[Problem]:
    """One KV budget kind per seat; fractions per GPU sum to <= 1; budgets fit the GPU."""
    fractions: dict[tuple[str, int], list[Seat]] = defaultdict(list)
    for seat in sorted(desired.seats.values(), key=lambda s: s.name):
        rel = _seat_file(seat)
        has_bytes, has_fraction = (
            seat.kv_cache_bytes is not None,
            seat.gpu_memory_utilization is not None,
        )
        if seat.engine == "llama.cpp":
            yield from _check_llamacpp_budget(seat, src)
        elif seat.parallel is not None:
            yield src.problem(
                rel,
                ("parallel",),
                "parallel is for llama.cpp seats: vLLM batches requests within its KV budget",
            )
        if seat.engine == "vllm" and has_bytes == has_fraction:
            yield src.problem(
                rel,
                ("kv_cache_bytes",) if has_bytes else (),
                "give exactly one of kv_cache_bytes and gpu_memory_utilization",
            )
        fraction = seat.gpu_memory_utilization
        if fraction is not None and not 0 < fraction <= 1:
            yield src.problem(
                rel,
                ("gpu_memory_utilization",),
                f"gpu_memory_utilization must be in (0, 1], got {fraction}",
            )
        for index in seat.gpus:
            if fraction is not None:
                fractions[(seat.host, index)].append(seat)
        yield from _check_budget_fits(desired, seat, src)
    yield from _check_fraction_sums(fractions, src)


def _check_llamacpp_budget(seat: Seat, src: Sources) -> Iterator[Problem]:
    """llama.cpp sizes its KV cache by context x parallel slots; it takes no byte budget."""
    for field in ("kv_cache_bytes", "gpu_memory_utilization"):
        if getattr(seat, field) is not None:
            yield src.problem(
                _seat_file(seat),
                (field,),
                f"llama.cpp sizes its KV cache by context x parallel slots: remove {field}",
            )


def _check_budget_fits(desired: DesiredFleet, seat: Seat, src: Sources) -> Iterator[Problem]:
    host = desired.hosts.get(seat.host)
    if host is None or seat.kv_cache_bytes is None:
        return
    for gpu in host.gpus:
        if gpu.index in seat.gpus and seat.kv_cache_bytes > gpu.memory:
            yield src.problem(
                _seat_file(seat),
                ("kv_cache_bytes",),
                f"KV budget "
                f"{format_bytes(seat.kv_cache_bytes)} exceeds GPU {gpu.index}'s "
                f"memory ({format_bytes(gpu.memory)}) on {host.name}",
            )


def _check_fraction_sums(
    fractions: dict[tuple[str, int], list[Seat]], src: Sources
) -> Iterator[Problem]:
    for (host, index), seats in sorted(fractions.items()):
        total = sum(s.gpu_memory_utilization or 0 for s in seats)
        if total > 1.0 + 1e-9:
            names = ", ".join(f"{s.name} {s.gpu_memory_utilization}" for s in seats)
            last = seats[-1]
            yield src.problem(
                _seat_file(last),
                ("gpu_memory_utilization",),
                f"gpu_memory_utilization on {host} GPU {index} sums to {total:.2f} > 1.0 ({names})",
            )


def check_speculative(desired: DesiredFleet, src: Sources) -> Iterator[Problem]:
    """The method is one vLLM accepts, k >= 1, and a drafter exactly where one is needed."""
    for seat in sorted(desired.seats.values(), key=lambda s: s.name):
        spec = seat.speculative
        if spec is None:
            continue
        rel = _seat_file(seat)
        if seat.engine == "llama.cpp" and spec.method != "draft_model":
            yield src.problem(
                rel,
                ("speculative", "method"),
                f"llama.cpp drafts only with a separate model: method draft_model, "
                f"not {spec.method!r}",
            )
            continue
        if spec.method not in speculative.SPECULATIVE_METHODS:
            yield src.problem(
                rel,
                ("speculative", "method"),
                f"unknown speculative method {spec.method!r}{_closest(spec.method)}",
            )
        if spec.num_tokens < 1:
            yield src.problem(
                rel,
                ("speculative", "num_tokens"),
                f"num_tokens must be at least 1, got {spec.num_tokens}",
            )
        needs = speculative.needs_drafter(spec.method)
        if needs and not spec.draft_model:
            yield src.problem(
                rel,
                ("speculative",),
                f"method {spec.method!r} drafts with a separate model: set draft_model",
            )
        if needs is False and spec.draft_model:
            yield src.problem(
                rel,
                ("speculative", "draft_model"),
                f"method {spec.method!r} drafts without a separate model: remove draft_model",
            )


def _closest(method: str) -> str:
    match = difflib.get_close_matches(method, sorted(speculative.SPECULATIVE_METHODS), n=1)
    return f" (did you mean {match[0]!r}?)" if match else ""


def check_ranges(desired: DesiredFleet, src: Sources) -> Iterator[Problem]:
    """Concurrency bands have 0 < min <= max; contexts are positive."""
    yield from _check_band(desired.settings.concurrency_band, "fleet.yaml", src)
    for seat in sorted(desired.seats.values(), key=lambda s: s.name):
        if seat.concurrency_band is not None:
            yield from _check_band(seat.concurrency_band, _seat_file(seat), src)
        if seat.context <= 0:
            yield src.problem(
                _seat_file(seat), ("context",), f"context must be positive, got {seat.context}"
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
    for rel, text in sorted(src.texts.items()):
        for line, kind in secrets.find_key_shapes(text):
            yield Problem(
                path=src.display(rel),
                line=line,
                message=f"this line holds what "
                f"looks like {kind}: move it to an environment variable and write "
                "${ENV_VAR}",
            )


RULES: tuple[Rule, ...] = (
    check_placement,
    check_aliases,
    check_images,
    check_memory,
    check_speculative,
    check_ranges,
)
