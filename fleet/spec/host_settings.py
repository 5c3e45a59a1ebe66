"""A host's runtime settings: the keys of desired/hosts/<host>.yaml that belong to its runtime.

A host file is flat (`runtime: compose` beside `compose_dir:`), but only the neutral keys
are `fleet.spec.models.Host`'s own; every other key is its runtime's, validated by the
model that runtime registered under its name (`RUNTIME_SETTINGS`, chosen by `runtime:`,
as a pydantic discriminated union would): compose's `compose_dir` and `gpu_handover`;
systemd has none of its own yet (its unit and secrets directories are fixed paths). So a
compose-only key on a systemd host is an error naming the runtime, and a neutral model
carries no runtime's fields. Where fleet keeps a host's apply lock and journal is the
host's `state_dir`, by default the runtime's (`RuntimeSettings.default_state_dir`: the
compose directory on a compose host, `/srv/fleet` otherwise, where it always was).

The spec layer cannot import a runtime, so the built-in runtimes' models live here and
`fleet.runtimes.register` registers another runtime's own (`Runtime.SETTINGS`).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import Field, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from fleet.base import CoreModel

STATE_DIR = "/srv/fleet"  # where fleet keeps its apply lock and journal, unless told


class RuntimeSettings(CoreModel):
    """The settings of a host's runtime (a runtime's subclass; this one has none)."""

    def default_state_dir(self) -> str:
        """Where fleet keeps its apply lock and journal on such a host, unless told."""
        return STATE_DIR


class ComposeHostSettings(RuntimeSettings):
    """A compose host's own keys."""

    compose_dir: str = Field("/srv/fleet", description="Directory of compose files on the host.")
    gpu_handover: Literal["device_requests", "runtime"] = Field(
        "device_requests",
        description="device_requests: compose device reservations with device_ids; "
        "runtime: `runtime: nvidia` with NVIDIA_VISIBLE_DEVICES.",
    )

    def default_state_dir(self) -> str:
        """The compose directory, beside the compose file."""
        return self.compose_dir


class SystemdHostSettings(RuntimeSettings):
    """A systemd host's own keys (none yet: units go to /etc/systemd/system)."""


RUNTIME_SETTINGS: dict[str, type[RuntimeSettings]] = {
    "compose": ComposeHostSettings,
    "systemd": SystemdHostSettings,
}
"""Each runtime's settings model, by the runtime's name (`runtime:` of a host file)."""


def register_settings(runtime: str, model: type[RuntimeSettings]) -> None:
    """Make `runtime` a value of `runtime:`, its host files' own keys read by `model`."""
    RUNTIME_SETTINGS[runtime] = model


def unknown_runtime(name: str) -> PydanticCustomError:
    """`runtime: expected one of ...` for a runtime no one registered."""
    known = [repr(n) for n in RUNTIME_SETTINGS]
    expected = f"{', '.join(known[:-1])} or {known[-1]}" if len(known) > 1 else known[0]
    return PydanticCustomError(
        "literal_error", "Input should be {expected}", {"expected": expected}
    )


def read_settings(runtime: str, keys: dict[str, Any], neutral: Iterable[str]) -> RuntimeSettings:
    """The runtime's settings of a host file's own keys; each key the runtime does not
    take is an error at that key, naming the runtime (and the one it belongs to)."""
    model = RUNTIME_SETTINGS[runtime]
    errors = [
        InitErrorDetails(type=_not_its_setting(runtime, key, neutral), loc=(key,), input=value)
        for key, value in keys.items()
        if key not in model.model_fields
    ]
    if errors:
        raise ValidationError.from_exception_data("host settings", errors)
    return model.model_validate(keys)


def _not_its_setting(runtime: str, key: str, neutral: Iterable[str]) -> PydanticCustomError:
    owners = sorted(n for n, m in RUNTIME_SETTINGS.items() if key in m.model_fields)
    if owners:
        return PydanticCustomError(
            "runtime_setting",
            "a setting of {owners} hosts, not of this {runtime} host",
            {"owners": " and ".join(owners), "runtime": runtime},
        )
    known = sorted({*neutral, *RUNTIME_SETTINGS[runtime].model_fields})
    match = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    hint = f"did you mean {match[0]!r}?" if match else f"known keys: {', '.join(known)}"
    return PydanticCustomError(
        "runtime_setting",
        "unknown key on a {runtime} host ({hint})",
        {"runtime": runtime, "hint": hint},
    )
