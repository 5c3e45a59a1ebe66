"""The API server process: `vllm serve ...` and `python3 -m vllm.entrypoints.openai.api_server`.

Parses the command line, prints the banner and `non-default args`, resolves the model
(config.json, max model len), starts the EngineCore child, waits for it and serves
HTTP (server.py) while lifeline.py watches the child. Fails like vLLM: argparse errors
exit 2, configuration and engine errors exit 1.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from .args import ServeArgs, parse_serve_args
from .core import read_result, spawn, title
from .lifeline import EngineLink
from .logfmt import Log, series, version_lines
from .modelinfo import ModelError, ModelShape, load_shape
from .server import serve_forever

TRACE = "Traceback (most recent call last):"


def image_version() -> str:
    """The vLLM version this image stands for."""
    return os.environ.get("FLEET_LAB_VLLM_VERSION", "0.18.0")


def fail(log: Log, lines: list[str]) -> int:
    """Print a Python traceback tail the way the API server process does; exit code 1."""
    for line in [TRACE, *lines]:
        log.raw(line)
    return 1


def invalid_model(log: Log, model: str) -> int:
    """vLLM's error for a model directory without config.json (or no directory)."""
    lines = [
        f"ValueError: Invalid repository ID or local directory specified: '{model}'.",
        "Please verify the following requirements:",
        "1. Provide a valid Hugging Face repository ID.",
        "2. Specify a local directory that contains a recognized configuration file.",
        "   - For Hugging Face models: ensure the presence of a 'config.json'.",
        "   - For Mistral models: ensure the presence of a 'params.json'.",
    ]
    return fail(log, lines)


def max_len_error(version: str, asked: int, derived: int) -> list[str]:
    """The rejection of --max-model-len above max_position_embeddings."""
    core = (
        f"User-specified max_model_len ({asked}) is greater than the derived max_model_len "
        f"(max_position_embeddings={derived} or model_max_length=None in model's config.json)."
    )
    if series(version) == "0.9":
        return [
            f"ValueError: {core} This may lead to incorrect model outputs or CUDA errors. "
            "To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1"
        ]
    return [
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig",
        f"  Value error, {core} To allow overriding this maximum, set the env var "
        "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with "
        "extreme caution. If the model uses relative position encoding (RoPE), positions "
        "exceeding derived_max_model_len lead to nan. If the model uses absolute position "
        "encoding, positions exceeding derived_max_model_len will cause a CUDA array "
        "out-of-bounds error. [type=value_error, input_value=ArgsKwargs((), {'model': ...}), "
        "input_type=ArgsKwargs]",
    ]


def engine_cfg(args: ServeArgs, shape: ModelShape, max_len: int, version: str) -> dict[str, Any]:
    """The resolved settings handed to the EngineCore child."""
    dtype = shape.dtype if args.dtype == "auto" else args.dtype.replace("half", "float16")
    return {
        "version": version,
        "model": args.model,
        "served_names": args.served_names,
        "max_model_len": max_len,
        "tensor_parallel_size": args.tensor_parallel_size,
        "gpu_memory_utilization": args.gpu_memory_utilization,
        "kv_cache_memory_bytes": args.kv_cache_memory_bytes,
        "kv_cache_dtype": args.kv_cache_dtype,
        "dtype": dtype,
        "quantization": args.quantization or shape.quantization,
        "speculative": args.speculative,
        "max_num_seqs": args.max_num_seqs,
        "enforce_eager": bool(args.non_default.get("enforce_eager")),
        "fail": os.environ.get("FLEET_LAB_FAIL", ""),
    }


def resolve(args: ServeArgs, log: Log, version: str) -> dict[str, Any] | int:
    """Model config and max model len, or the exit code of vLLM's failure."""
    try:
        shape = load_shape(Path(args.model))
    except ModelError:
        return invalid_model(log, args.model)
    log.info("arch", f"Resolved architecture: {shape.architecture}")
    max_len = args.max_model_len or shape.max_position_embeddings
    allow_long = os.environ.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN") == "1"
    if max_len > shape.max_position_embeddings and not allow_long:
        return fail(log, max_len_error(version, max_len, shape.max_position_embeddings))
    log.info("maxlen", f"Using max model len {max_len}")
    return engine_cfg(args, shape, max_len, version)


def serve(argv: list[str], prog: str, positional_model: bool) -> int:
    """Run the API server; returns the exit code when start-up fails."""
    version = image_version()
    args = parse_serve_args(argv, prog, positional_model, version)
    log = Log(version, "api", os.getpid())
    version_lines(log, args.model)
    log.info("args", f"non-default args: {args.non_default!r}")
    cfg = resolve(args, log, version)
    if isinstance(cfg, int):
        return cfg
    proc, fd = spawn(
        title(cfg, "EngineCore"), "vllm.enginecore", {"FLEET_LAB_ENGINE_CFG": json.dumps(cfg)}
    )
    link = EngineLink(proc, log)
    link.stop_on_signal()
    result = read_result(fd)
    if not result.get("ok"):
        proc.wait()
        return fail(
            log,
            [
                "RuntimeError: Engine core initialization failed. See root cause "
                "above. Failed core proc(s): {}"
            ],
        )
    for key in ("kv_tokens", "max_concurrency", "num_blocks", "block_size"):
        cfg[key] = result.get(key)
    link.watch()
    serve_forever(cfg, log, args.host, args.port, link)
    return 0


def drop_arg(argv: list[str]) -> None:
    """FLEET_LAB_DROP_ARG=--flag: re-exec without that flag and its value, as a wrapper
    entrypoint that loses an argument would; the process's cmdline then lacks it."""
    flag = os.environ.pop("FLEET_LAB_DROP_ARG", "")
    if flag and flag in argv:
        at = argv.index(flag)
        kept = argv[:at] + argv[at + 2 :]
        os.execv(sys.executable, [sys.executable, sys.argv[0], *kept])


def main() -> int:
    """`vllm <subcommand>`: only `serve` (and --version) exist in the stand-in."""
    argv = sys.argv[1:]
    drop_arg(argv)
    if argv[:1] == ["--version"]:
        print(image_version())
        return 0
    if argv[:1] != ["serve"]:
        print(
            "usage: vllm [-h] [-v] {chat,complete,serve,bench,collect-env,run-batch} ...",
            file=sys.stderr,
        )
        return 2
    return serve(argv[1:], "vllm serve", positional_model=True)


def api_server_main() -> int:
    """The pre-`vllm serve` image entrypoint: `--model` only, no positional model."""
    return serve(sys.argv[1:], "api_server.py", positional_model=False)
