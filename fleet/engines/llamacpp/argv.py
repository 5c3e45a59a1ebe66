"""llama-server's command line as fleet reads it back: the program and its flags.

`llama-server -m MODEL ...` (the server images install it as `/app/llama-server`; older
ones as `server`), with its short and long spellings. Called by
`fleet.engines.parse_engine_argv` through the llama.cpp engine module.

The draft options were renamed by llama.cpp's speculative-params refactor (PR #22397,
merged 2026-04-28): `--model-draft` became `--spec-draft-model` (the old spelling and
`-md` stay aliases) and `--draft-max` / `--draft` / `--draft-n` became
`--spec-draft-n-max`; the old spellings of the count are refused from then on ("the
argument has been removed", exit 1). And a draft model alone no longer drafts: b11434
loads it and logs `no implementations specified for speculative decoding` unless
`--spec-type draft-simple` names the method (only MTP, DFlash and DSpark drafters are
recognised from their GGUF). Both spellings are read back; `draft_flags` gives the flags
a build needs, and a `--spec-type draft-simple` beside a draft model is fleet's own.
SPEC_DRAFT_SINCE is the first build with the new names, as near as the release dates
place it (b8651 was 2026-04-03, b9174 2026-05-16, about 12 builds a day): builds from it
on get the new names, older ones the old.
"""

from __future__ import annotations

import re

from fleet.facts.argv import EngineArgs, Reader, names, positive_int, program_name, read_flags, text

FLAGS: dict[str, Reader] = {
    "-m": ("model", text),
    "--model": ("model", text),
    "-a": ("served_model_names", names),
    "--alias": ("served_model_names", names),
    "--host": ("host", text),
    "--port": ("port", positive_int),
    "-c": ("ctx_size", positive_int),
    "--ctx-size": ("ctx_size", positive_int),
    "-np": ("parallel_slots", positive_int),
    "--parallel": ("parallel_slots", positive_int),
    "-ngl": ("gpu_layers", positive_int),
    "--gpu-layers": ("gpu_layers", positive_int),
    "--n-gpu-layers": ("gpu_layers", positive_int),
    "-md": ("draft_model", text),
    "--model-draft": ("draft_model", text),
    "--spec-draft-model": ("draft_model", text),
    "--spec-draft-n-max": ("draft_max", positive_int),
    "--draft-max": ("draft_max", positive_int),
    "--draft": ("draft_max", positive_int),
    "--draft-n": ("draft_max", positive_int),
    "-ctk": ("kv_cache_dtype", text),
    "--cache-type-k": ("kv_cache_dtype", text),
}
# Flags only llama-server takes: a bare command (no program) with one of them is llama.cpp.
OWN_FLAGS = frozenset({"-m", "-c", "--ctx-size", "-ngl", "--n-gpu-layers", "-np"})
SPEC_DRAFT_SINCE = 8960
NEW_DRAFT_FLAGS = ("--spec-draft-model", "--spec-draft-n-max")
OLD_DRAFT_FLAGS = ("--model-draft", "--draft-max")
DRAFT_TYPE = ("--spec-type", "draft-simple")
# `server-b6100`, `server-cuda-b6100`, `server-cuda13-b10548`, `full-b5000`, `b11434`
_BUILD_TAG = re.compile(r"(?:^|-)b(\d+)$")


def image_build(image: str) -> int | None:
    """The llama.cpp build number an image's tag names (`...:server-b11434`), else None
    (`:server`, `:latest`, a digest only, or an executable path on a systemd host)."""
    reference = image.split("@", 1)[0]
    last = reference.rsplit("/", 1)[-1]
    if ":" not in last:
        return None
    match = _BUILD_TAG.search(last.rsplit(":", 1)[1])
    return int(match.group(1)) if match else None


def draft_flags(build: int | None, model: str, tokens: int) -> list[str]:
    """The flags that make `build` draft `tokens` tokens with the draft model `model`;
    an unknown build (a moving tag, an executable) is taken to be a current one."""
    if build is not None and build < SPEC_DRAFT_SINCE:
        return [OLD_DRAFT_FLAGS[0], model, OLD_DRAFT_FLAGS[1], str(tokens)]
    return [*DRAFT_TYPE, NEW_DRAFT_FLAGS[0], model, NEW_DRAFT_FLAGS[1], str(tokens)]


def without_draft_type(extra: tuple[str, ...]) -> tuple[str, ...]:
    """The extra flags without fleet's own `--spec-type draft-simple` (either form)."""
    out: list[str] = []
    skip = False
    for i, token in enumerate(extra):
        if skip:
            skip = False
            continue
        if token == f"{DRAFT_TYPE[0]}={DRAFT_TYPE[1]}":
            continue
        if token == DRAFT_TYPE[0] and extra[i + 1 : i + 2] == (DRAFT_TYPE[1],):
            skip = True
            continue
        out.append(token)
    return tuple(out)


def detect(tokens: list[str]) -> int | None:
    """1 when the argv starts llama-server, else None."""
    name = program_name(tokens[0]) if tokens else ""
    return 1 if name in ("llama-server", "server") or name.startswith("llama-server") else None


def parse_args(engine: str, program: list[str], rest: list[str]) -> EngineArgs:
    """llama-server's flags after its program."""
    values: dict[str, object] = {}
    extra = read_flags(rest, FLAGS, values)
    values.update(engine=engine, program=tuple(program), extra=tuple(extra))
    return EngineArgs.model_validate(values)
