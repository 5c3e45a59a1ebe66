"""The engine's own settings as a vLLM startup log states them, read value by value.

`fleet.engines.vllm.log` finds the engine-config line (`Initializing a V1 LLM engine ...
with config: ...`) and the args (`non-default args: {...}` or `args: Namespace(...)`);
this module reads from them what takes more than one key: the served names, speculative
decoding (the config line's `SpeculativeConfig(...)` repr, the args' JSON, or the older
`speculative_model` flags), and the first integer or string among several sources. Pure.
"""

from __future__ import annotations

import re

from fleet.engines.report import SpeculativeFact
from fleet.facts._text import parse_assignments, to_int

_SPEC_REPR = re.compile(r"SpeculativeConfig\((.*)\)")


def served_names_of(
    config: dict[str, object], args: dict[str, object], model: str | None
) -> tuple[str, ...]:
    """All names from the args (vLLM takes several); the config line shows only the first.

    A log that names none (or `None`) serves under the model as given on the command line.
    """
    names = args.get("served_model_name")
    if isinstance(names, list | tuple):
        listed = tuple(name for name in names if isinstance(name, str) and name)
        if listed:
            return listed
    single = first_of_str(names, config.get("served_model_name"))
    if single:
        return (single,)
    default = first_of_str(args.get("model"), args.get("model_tag")) or model
    return (default,) if default else ()


def speculative_of(config: dict[str, object], args: dict[str, object]) -> SpeculativeFact | None:
    """From the engine line's `SpeculativeConfig(...)` repr, else the JSON the args carry."""
    if "speculative_config" in config:
        value = config["speculative_config"]
        match = _SPEC_REPR.search(value) if isinstance(value, str) else None
        if match is None:
            return None
        fields = parse_assignments(match.group(1))
        return SpeculativeFact(
            method=first_of_str(fields.get("method")),
            num_tokens=first_of_int(fields.get("num_spec_tokens")),
            draft_model=first_of_str(fields.get("model"), fields.get("draft_model")),
        )
    spec = args.get("speculative_config")
    if isinstance(spec, dict):
        return SpeculativeFact(
            method=first_of_str(spec.get("method")),
            num_tokens=first_of_int(spec.get("num_speculative_tokens")),
            draft_model=first_of_str(spec.get("model")),
        )
    if first_of_str(args.get("speculative_model")):
        return SpeculativeFact(
            num_tokens=first_of_int(args.get("num_speculative_tokens")),
            draft_model=first_of_str(args.get("speculative_model")),
        )
    return None


def int_of(value: object) -> int | None:
    """An int from an int or a digit string; bools and anything else are None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    return to_int(value) if isinstance(value, str) else None


def first_of_int(*values: object) -> int | None:
    """The first value that is an integer."""
    for value in values:
        if (number := int_of(value)) is not None:
            return number
    return None


def first_of_str(*values: object) -> str | None:
    """The first value that is a non-empty string other than `None`."""
    for value in values:
        if isinstance(value, str) and value.strip() and value.strip() != "None":
            return value.strip()
    return None
