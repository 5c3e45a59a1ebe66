"""One hand-made engine container as a desired/ seat file, each value with its source.

Called by `fleet.render.desired_files`. The engine's own flags come from its live argv,
read by the engine module the process runs (`fleet.engines`); what desired/ has no field
for stays verbatim in `extra_args`, so a seat imported and then planned compares equal to
what runs (adoption without a restart).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace

from fleet.engines import ENGINES, Engine, read_process
from fleet.facts.argv import EngineArgs
from fleet.observed.models import ObservedHost, ObservedSeat
from fleet.runtimes import runtime_for
from fleet.secrets import INTERPOLATION, mask_env_value, without_secret_args


@dataclass(frozen=True)
class ImportedSeat:
    """A seat file's lines (key, value, source), and what the operator must look at."""

    name: str
    lines: tuple[tuple[str, object, str], ...]
    variables: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    aliases: tuple[str, ...] = field(default=())

    def with_aliases(self, aliases: tuple[str, ...]) -> ImportedSeat:
        """The seat with the gateway aliases that route to it."""
        return replace(self, aliases=tuple(sorted(aliases)))

    def text(self) -> str:
        """The YAML of seats/<name>.yaml."""
        out = f"# Imported by `fleet import` from {self.name}. Review, then commit.\n"
        for key, value, source in self.lines:
            out += f"{key}: {json.dumps(value)}  # {source}\n"
        if self.aliases:
            out += f"aliases: {json.dumps(list(self.aliases))}  # gateway entries routing here\n"
        for note in self.notes:
            out += f"# import could not express: {note}\n"
        return out


def seat_name(live: ObservedSeat, host: str, taken: set[str]) -> str:
    """The compose service's name, else the container's, as a seat name (unique)."""
    name = live.hand_name
    return name if name not in taken else f"{name}-{host}"


def import_seat(host: ObservedHost, live: ObservedSeat, name: str) -> ImportedSeat:
    """The seat file for one engine container on `host`."""
    args, found = read_process(live.instance.argv)
    engine: Engine = found or next(iter(ENGINES.values()))  # observation found an engine
    kind = engine.NAME
    lines: list[tuple[str, object, str]] = [("host", host.name, "observed on this host")]
    lines.append(_gpus(live))
    lines.append(("engine", kind, f"the process runs {' '.join(args.program) or kind}"))
    lines.append(("image", _image(live), runtime_for(host.runtime or "").IMAGE_SOURCE))
    lines += _model_lines(live, args)
    lines += engine.import_lines(args)
    port = args.port or engine.DEFAULT_PORT
    lines.append(("port", port, "the live argv" if args.port else f"{kind}'s default port"))
    rendered = engine.RENDERED_SWITCHES  # fleet renders these anyway
    extra, secret_args = without_secret_args([a for a in args.extra if a not in rendered])
    if extra:
        lines.append(("extra_args", extra, "the other flags of the live argv"))
    env = {k: mask_env_value(k, v) for k, v in sorted(live.instance.env.items())}
    if env:
        lines.append(("env", env, "the container's own environment; secrets as ${VAR}"))
    variables = tuple(v for value in env.values() for v in INTERPOLATION.findall(value))
    notes = _notes(live, args) + [
        f"{arg}: a secret in the engine's argv, left out of desired/; give it to the "
        "engine through env: as a ${VAR} (its env file is 0600)"
        for arg in secret_args
    ]
    return ImportedSeat(name, tuple(lines), variables, tuple(notes))


def _gpus(live: ObservedSeat) -> tuple[str, object, str]:
    if live.gpus:
        return ("gpus", list(live.gpus), "nvidia-smi: the engine's processes hold these GPUs")
    requested = sorted(int(g) for g in live.instance.gpu_request if g.isdigit())
    if requested:
        return ("gpus", requested, "what the container requested (no GPU process seen)")
    return ("gpus", [], "no GPU held or requested: runs on the CPU")


def _image(live: ObservedSeat) -> str:
    image = live.instance.image
    if "@" in image or not live.instance.repo_digests:
        return image
    digest = live.instance.repo_digests[0].partition("@")[2]
    return f"{image}@{digest}" if digest else image


def _model_lines(live: ObservedSeat, args: EngineArgs) -> list[tuple[str, object, str]]:
    model = args.model or (live.engine.model if live.engine else None) or ""
    names = args.served_model_names or ((model,) if model else ())
    context = live.max_model_len or (live.engine.max_model_len if live.engine else None)
    source = "the live argv" if live.max_model_len else "the engine's startup log"
    found: list[tuple[str, object, str]] = [("model", model, "the live argv")]
    found.append(("served_name", names[0] if names else model, "the live argv's served name"))
    found.append(("context", context or 0, f"{source} (max model len per request)"))
    return found


def _notes(live: ObservedSeat, args: EngineArgs) -> list[str]:
    notes = []
    if args.tensor_parallel_size and live.gpus and args.tensor_parallel_size != len(live.gpus):
        notes.append(f"tensor parallel {args.tensor_parallel_size} on {len(live.gpus)} GPU(s)")
    if not live.max_model_len and not (live.engine and live.engine.max_model_len):
        notes.append("no context length in the argv or the log: set `context`")
    return notes
