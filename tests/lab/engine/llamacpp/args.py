"""llama-server's command line as the stand-in understands it.

The flags that change what it does, long and short, with llama.cpp's `LLAMA_ARG_*`
environment fallbacks (the ggml-org server images set LLAMA_ARG_HOST=0.0.0.0); a flag on
the command line wins over its variable. Any other flag is tolerated: it takes the next
token as its value unless that token is a flag itself. Defaults: port 8080, context 4096
(0: the model's), one slot, no GPU layers, f16 KV cache.

The stand-in is b11434 (the build the lab's real llama-server is) unless
FLEET_LAB_LLAMACPP_BUILD names another (the `server-b6100` images set 6100). The draft
options follow llama.cpp's rename (PR #22397, b8960 as fleet places it): a build before it
knows only `--model-draft` / `--draft-max` and refuses `--spec-draft-model` /
`--spec-draft-n-max` as an unknown argument (exit 1), as the real b6100 does; a build from
the rename on takes the new names, refuses `--draft-max` with the real b11434's message,
drafts with a draft model only when `--spec-type draft-simple` names the method
(`drafts()`) and with the model's own MTP blocks when it names `draft-mtp`
(`drafts_mtp()`), as b11434.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

DEFAULT_MODEL = "models/7B/ggml-model-f16.gguf"
NUMBER = re.compile(r"^-?\d+(\.\d+)?$")
KV_TYPES = ("f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1")

# option -> (field, env var, kind); kind: str, int, flag (no value), noflag (sets False)
OPTIONS: dict[str, tuple[str, str, str]] = {
    "-m": ("model", "LLAMA_ARG_MODEL", "str"),
    "--model": ("model", "LLAMA_ARG_MODEL", "str"),
    "-a": ("alias", "LLAMA_ARG_ALIAS", "str"),
    "--alias": ("alias", "LLAMA_ARG_ALIAS", "str"),
    "--host": ("host", "LLAMA_ARG_HOST", "str"),
    "--port": ("port", "LLAMA_ARG_PORT", "int"),
    "-c": ("ctx_size", "LLAMA_ARG_CTX_SIZE", "int"),
    "--ctx-size": ("ctx_size", "LLAMA_ARG_CTX_SIZE", "int"),
    "-np": ("parallel", "LLAMA_ARG_N_PARALLEL", "int"),
    "--parallel": ("parallel", "LLAMA_ARG_N_PARALLEL", "int"),
    "-ngl": ("n_gpu_layers", "LLAMA_ARG_N_GPU_LAYERS", "int"),
    "--gpu-layers": ("n_gpu_layers", "LLAMA_ARG_N_GPU_LAYERS", "int"),
    "--n-gpu-layers": ("n_gpu_layers", "LLAMA_ARG_N_GPU_LAYERS", "int"),
    "-md": ("model_draft", "LLAMA_ARG_MODEL_DRAFT", "str"),
    "--model-draft": ("model_draft", "LLAMA_ARG_MODEL_DRAFT", "str"),
    "--draft-max": ("draft_max", "LLAMA_ARG_DRAFT_MAX", "int"),
    "--draft": ("draft_max", "LLAMA_ARG_DRAFT_MAX", "int"),
    "--draft-n": ("draft_max", "LLAMA_ARG_DRAFT_MAX", "int"),
    "-ngld": ("n_gpu_layers_draft", "LLAMA_ARG_N_GPU_LAYERS_DRAFT", "int"),
    "--gpu-layers-draft": ("n_gpu_layers_draft", "LLAMA_ARG_N_GPU_LAYERS_DRAFT", "int"),
    "--n-gpu-layers-draft": ("n_gpu_layers_draft", "LLAMA_ARG_N_GPU_LAYERS_DRAFT", "int"),
    "-cd": ("ctx_size_draft", "LLAMA_ARG_CTX_SIZE_DRAFT", "int"),
    "--ctx-size-draft": ("ctx_size_draft", "LLAMA_ARG_CTX_SIZE_DRAFT", "int"),
    "-ctk": ("cache_type_k", "LLAMA_ARG_CACHE_TYPE_K", "str"),
    "--cache-type-k": ("cache_type_k", "LLAMA_ARG_CACHE_TYPE_K", "str"),
    "-ctv": ("cache_type_v", "LLAMA_ARG_CACHE_TYPE_V", "str"),
    "--cache-type-v": ("cache_type_v", "LLAMA_ARG_CACHE_TYPE_V", "str"),
    "-ub": ("ubatch_size", "LLAMA_ARG_UBATCH", "int"),
    "--ubatch-size": ("ubatch_size", "LLAMA_ARG_UBATCH", "int"),
    "-b": ("batch_size", "LLAMA_ARG_BATCH", "int"),
    "--batch-size": ("batch_size", "LLAMA_ARG_BATCH", "int"),
    "-t": ("threads", "LLAMA_ARG_THREADS", "int"),
    "--threads": ("threads", "LLAMA_ARG_THREADS", "int"),
    "-fa": ("flash_attn", "LLAMA_ARG_FLASH_ATTN", "str"),
    "--flash-attn": ("flash_attn", "LLAMA_ARG_FLASH_ATTN", "str"),
    "--metrics": ("metrics", "LLAMA_ARG_ENDPOINT_METRICS", "flag"),
    "--slots": ("slots", "LLAMA_ARG_ENDPOINT_SLOTS", "flag"),
    "--no-slots": ("slots", "LLAMA_ARG_NO_ENDPOINT_SLOTS", "noflag"),
    "-kvu": ("kv_unified", "LLAMA_ARG_KV_UNIFIED", "flag"),
    "--kv-unified": ("kv_unified", "LLAMA_ARG_KV_UNIFIED", "flag"),
    "-nkvo": ("no_kv_offload", "LLAMA_ARG_NO_KV_OFFLOAD", "flag"),
    "--no-kv-offload": ("no_kv_offload", "LLAMA_ARG_NO_KV_OFFLOAD", "flag"),
    "--no-mmap": ("no_mmap", "LLAMA_ARG_NO_MMAP", "flag"),
    "-lv": ("verbosity", "LLAMA_LOG_VERBOSITY", "int"),
    "--verbosity": ("verbosity", "LLAMA_LOG_VERBOSITY", "int"),
    "--log-verbosity": ("verbosity", "LLAMA_LOG_VERBOSITY", "int"),
}
BUILD = int(os.environ.get("FLEET_LAB_LLAMACPP_BUILD", "11434"))
RENAMED_SINCE = 8960
NEW_NAMES: dict[str, tuple[str, str, str]] = {
    "--spec-draft-model": ("model_draft", "LLAMA_ARG_SPEC_DRAFT_MODEL", "str"),
    "--spec-draft-n-max": ("draft_max", "LLAMA_ARG_SPEC_DRAFT_N_MAX", "int"),
    "--spec-type": ("spec_type", "LLAMA_ARG_SPEC_TYPE", "str"),
}
REMOVED = ("--draft", "--draft-n", "--draft-max")
REMOVED_MESSAGE = (
    'error while handling argument "{}": the argument has been removed. '
    "use --spec-draft-n-max or --spec-ngram-mod-n-max"
)
if BUILD >= RENAMED_SINCE:
    OPTIONS.update(NEW_NAMES)
VALUELESS = {"--jinja", "--no-webui", "--cont-batching", "--no-warmup", "-v", "--verbose"}


@dataclass
class ServerArgs:
    """The parsed command line."""

    model: str = DEFAULT_MODEL
    alias: str | None = None
    host: str = "127.0.0.1"
    port: int = 8080
    ctx_size: int = 4096
    parallel: int = 1
    n_gpu_layers: int = 0
    model_draft: str | None = None
    draft_max: int = 16
    spec_type: str = "none"
    n_gpu_layers_draft: int | None = None
    ctx_size_draft: int = 0
    cache_type_k: str = "f16"
    cache_type_v: str = "f16"
    ubatch_size: int = 512
    batch_size: int = 2048
    threads: int = 8
    flash_attn: str = "auto"
    metrics: bool = False
    slots: bool = True
    kv_unified: bool = False
    no_kv_offload: bool = False
    no_mmap: bool = False
    verbosity: int = 3
    extra: list[str] = field(default_factory=list)


class ArgError(Exception):
    """A value llama-server's parser rejects (its message)."""


def convert(kind: str, option: str, text: str) -> object:
    """A flag's value, as its kind says."""
    if kind == "int":
        try:
            return int(text)
        except ValueError as err:
            raise ArgError(f'error while handling argument "{option}": stoi') from err
    if option in ("-ctk", "--cache-type-k", "-ctv", "--cache-type-v") and text not in KV_TYPES:
        raise ArgError(f'error while handling argument "{option}": Unsupported cache type: {text}')
    return text


def from_env(args: ServerArgs, given: set[str]) -> None:
    """LLAMA_ARG_* variables for the flags the command line did not give."""
    for _option, (name, env, kind) in OPTIONS.items():
        if name in given or env not in os.environ:
            continue
        text = os.environ[env]
        if kind in ("flag", "noflag"):
            on = text.lower() in ("1", "true", "on", "enabled")
            setattr(args, name, on if kind == "flag" else not on)
        else:
            setattr(args, name, convert(kind, env, text))


def drafts(args: ServerArgs) -> bool:
    """Whether the server drafts with its draft model (a build after the rename needs
    `--spec-type draft-simple`; before it, a draft model is enough)."""
    if args.model_draft is None:
        return False
    return BUILD < RENAMED_SINCE or "draft-simple" in args.spec_type.split(",")


def drafts_mtp(args: ServerArgs) -> bool:
    """Whether `--spec-type` asks for the model's own MTP head (`draft-mtp`, b11434)."""
    return BUILD >= RENAMED_SINCE and "draft-mtp" in args.spec_type.split(",")


def refuse_renamed(option: str) -> None:
    """The draft option spellings this build does not take (ArgError, as llama.cpp)."""
    if BUILD < RENAMED_SINCE and option in NEW_NAMES:
        raise ArgError(f"error: invalid argument: {option}")
    if BUILD >= RENAMED_SINCE and option in REMOVED:
        raise ArgError(REMOVED_MESSAGE.format(option))


def parse_args(argv: list[str]) -> ServerArgs:
    """Parse llama-server's argv (ArgError for a value it rejects)."""
    args, given = ServerArgs(), set()
    i = 0
    while i < len(argv):
        raw = argv[i]
        option, has_inline, inline = raw.partition("=")
        spec = OPTIONS.get(option if option.startswith("--") else raw)
        refuse_renamed(option if option.startswith("--") else raw)
        if spec is None:
            args.extra.append(raw)
            nxt = argv[i + 1] if i + 1 < len(argv) else None
            takes = raw not in VALUELESS and "=" not in raw and nxt is not None
            if takes and (not nxt.startswith("-") or NUMBER.match(nxt)):
                args.extra.append(nxt)
                i += 1
            i += 1
            continue
        name, _env, kind = spec
        given.add(name)
        if kind in ("flag", "noflag"):
            setattr(args, name, kind == "flag")
            i += 1
            continue
        if has_inline and option.startswith("--"):
            text = inline
        elif i + 1 < len(argv):
            text, i = argv[i + 1], i + 1
        else:
            raise ArgError(f'error while handling argument "{raw}": expected value for argument')
        setattr(args, name, convert(kind, option, text))
        i += 1
    from_env(args, given)
    return args
