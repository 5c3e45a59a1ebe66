"""Rules over seats' model origins (`model: {path, source, ...}`), run by `validate`.

A store source names a store of fleet.yaml's `stores:`; `sha256` is a single file's digest
(a GGUF), `manifest` a directory's files; two seats that share a model path on a host
agree on where it comes from (a hub token is a `${VAR}` reference: the secrets rule
refuses a literal one). What could change under the same spec is a warning, as a
floating image tag is: an hf:// revision that is not a commit, a store copy that no
revision, digest or manifest pins.
"""

from __future__ import annotations

from collections.abc import Iterator

from fleet.spec.load import Sources
from fleet.spec.model_origin import ModelOrigin
from fleet.spec.models import DesiredFleet, Seat
from fleet.spec.problems import Problem
from fleet.spec.seat_rules import seat_file

_SOURCE = ("model", "source")


def check_model_origins(desired: DesiredFleet, src: Sources) -> Iterator[Problem]:
    """Every seat's model origin, and the agreement of seats sharing a model path."""
    seen: dict[tuple[str, str], Seat] = {}
    for seat in sorted(desired.seats.values(), key=lambda s: s.name):
        origin = seat.model_origin
        if origin is None:
            continue
        yield from _check_origin(desired, seat, origin, src)
        first = seen.setdefault((seat.host, seat.model.rstrip("/")), seat)
        if first is not seat and first.model_origin not in (None, origin):
            yield src.problem(
                seat_file(seat),
                _SOURCE,
                f"seat {first.name} fetches {seat.model} on {seat.host} from "
                f"{first.model_origin.source if first.model_origin else '?'}: "
                "seats sharing a model path must agree on its origin",
            )


def _check_origin(
    desired: DesiredFleet, seat: Seat, origin: ModelOrigin, src: Sources
) -> Iterator[Problem]:
    rel = seat_file(seat)
    stores = desired.settings.stores
    if origin.store is not None and origin.store not in stores:
        known = ", ".join(sorted(stores)) or "none"
        yield src.problem(
            rel, _SOURCE, f"store {origin.store!r} is not in fleet.yaml stores (known: {known})"
        )
    if origin.sha256 and not seat.model.endswith(".gguf"):
        yield src.problem(
            rel,
            ("model", "sha256"),
            "sha256 is a single file's digest (a .gguf path); list a directory's files "
            "under manifest",
        )
    if (why := origin.unpinned()) is not None:
        yield src.problem(rel, _SOURCE, f"model source {origin.source} {why}", warning=True)
