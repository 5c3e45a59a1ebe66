"""A backend's own settings: the keys of a host file its runtime owns, of gateway.yaml its kind.

A host file is flat (`runtime: compose` beside `compose_dir:`), but only the neutral keys
are `fleet.spec.models.Host`'s own; every other key is its runtime's, validated by the
model that runtime registered under its name (`RUNTIME_SETTINGS`, chosen by `runtime:`,
as a pydantic discriminated union would): compose's `compose_dir` and `gpu_handover`
(`fleet.runtimes.compose.ComposeHostSettings`), systemd's `unit_dir` and `env_dir`
(`fleet.runtimes.systemd.SystemdHostSettings`). So a compose-only key on a systemd host is
an error naming the runtime, and a neutral model carries no runtime's fields. Where fleet
keeps a host's apply lock and journal is the host's `state_dir`, by default the runtime's
(`RuntimeSettings.default_state_dir`: the compose directory on a compose host,
`/srv/fleet` otherwise, where it always was).

gateway.yaml is read the same way: `kind:` chooses the model of its other keys
(`KIND_SETTINGS`: LiteLLM's `provider_prefix` and `alias_params`,
`fleet.gateways.litellm.settings`). Both files are a `WithSettings`: one validator reads
the other keys, whichever the backend.

The spec layer cannot import a runtime or a gateway kind: each owns its model and
`fleet.runtimes.register` / `fleet.gateways.register` add it here, so desired/ is read
once those packages are imported (the command line and the workflows import them).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, ClassVar

from pydantic import ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from fleet.base import CoreModel

STATE_DIR = "/srv/fleet"  # where fleet keeps its apply lock and journal, unless told


class RuntimeSettings(CoreModel):
    """The settings of a host's runtime (a runtime's subclass; this one has none)."""

    def default_state_dir(self) -> str:
        """Where fleet keeps its apply lock and journal on such a host, unless told."""
        return STATE_DIR


RUNTIME_SETTINGS: dict[str, type[RuntimeSettings]] = {}
"""Each runtime's settings model, by the runtime's name (`runtime:` of a host file), as
`fleet.runtimes.register` adds it (the built-in ones when `fleet.runtimes` is imported)."""


class KindSettings(CoreModel):
    """The settings of a gateway kind, read from gateway.yaml's other keys (a kind's
    subclass; this one has none)."""

    def named_aliases(self) -> Iterator[tuple[str, str]]:
        """(key, alias) for each alias a setting names, which must be a seat's."""
        return iter(())


KIND_SETTINGS: dict[str, type[KindSettings]] = {}
"""Each gateway kind's settings model, by the kind's name (`kind:` of gateway.yaml), as
`fleet.gateways.register` adds it (the built-in one when `fleet.gateways` is imported)."""


def default_settings(
    models: Mapping[str, type[CoreModel]], name: str, base: type[CoreModel]
) -> Any:
    """The settings of a file that names no backend: its default backend's defaults, or
    the `base` model's where that backend is not registered (a model built before its
    package was imported: a host file's neutral keys still read; a backend's key is then an
    unknown key)."""
    return models[name]() if name in models else base()


def settings_schema(models: Mapping[str, type[CoreModel]], what: str) -> Any:
    """A JSON-schema hook adding each backend's own keys to a file's schema (described as
    its backend's), so `fleet schema` shows the keys users write beside the neutral ones."""

    def add(schema: dict[str, Any]) -> None:
        properties = schema.setdefault("properties", {})
        for name, model in sorted(models.items()):
            for key, spec in model.model_json_schema().get("properties", {}).items():
                spec = dict(spec)
                spec["description"] = f"{what} {name} only: {spec.get('description', '')}"
                properties.setdefault(key, spec)

    return add


def register_settings(runtime: str, model: type[RuntimeSettings]) -> None:
    """Make `runtime` a value of `runtime:`, its host files' own keys read by `model`."""
    RUNTIME_SETTINGS[runtime] = model


def register_kind_settings(kind: str, model: type[KindSettings]) -> None:
    """Make `kind` a value of gateway.yaml's `kind:`, its other keys read by `model`."""
    KIND_SETTINGS[kind] = model


def unknown_runtime(name: str, registry: Iterable[str] | None = None) -> PydanticCustomError:
    """`runtime: expected one of ...` (or `kind:`) for a backend no one registered."""
    known = [repr(n) for n in (RUNTIME_SETTINGS if registry is None else registry)] or ["none"]
    expected = f"{', '.join(known[:-1])} or {known[-1]}" if len(known) > 1 else known[0]
    return PydanticCustomError(
        "literal_error", "Input should be {expected}", {"expected": expected}
    )


def with_settings(
    data: Any,
    neutral: set[str],
    models: Mapping[str, type[CoreModel]],
    what: str,
    tag: tuple[str, str],
) -> Any:
    """A file's data with the keys that are not `neutral` read into `settings` by the model
    its `tag` key (`runtime`, `kind`; its default beside it) chooses."""
    if not isinstance(data, dict) or isinstance(data.get("settings"), CoreModel):
        return data
    own = {k: v for k, v in data.items() if k in neutral}
    name = own.get(tag[0], tag[1])
    if isinstance(name, str) and name in models:
        given = data.get("settings")
        others = {k: v for k, v in data.items() if k not in neutral and k != "settings"}
        keys = {**(given if isinstance(given, dict) else {}), **others}
        own["settings"] = read_settings(models, what, name, keys, neutral)
    elif tag[0] not in own:  # its default backend is not registered
        own.update({k: v for k, v in data.items() if k not in neutral})
    return own


def read_settings(
    models: Mapping[str, type[CoreModel]],
    what: str,
    name: str,
    keys: dict[str, Any],
    neutral: Iterable[str],
) -> CoreModel:
    """The settings of a backend (`name` in `models`: a host's runtime, a gateway's kind)
    from a file's own keys; each key it does not take is an error at that key, naming the
    backend (and the one it belongs to)."""
    model = models[name]
    errors = [
        InitErrorDetails(
            type=_not_its_setting(models, what, name, key, neutral), loc=(key,), input=value
        )
        for key, value in keys.items()
        if key not in model.model_fields
    ]
    if errors:
        raise ValidationError.from_exception_data(f"{what} settings", errors)
    return model.model_validate(keys)


def _not_its_setting(
    models: Mapping[str, type[CoreModel]], what: str, name: str, key: str, neutral: Iterable[str]
) -> PydanticCustomError:
    owners = sorted(n for n, m in models.items() if key in m.model_fields)
    if owners:
        return PydanticCustomError(
            "backend_setting",
            "a setting of {owners} {what}s, not of this {name} {what}",
            {"owners": " and ".join(owners), "name": name, "what": what},
        )
    known = sorted({*neutral, *models[name].model_fields})
    match = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    hint = f"did you mean {match[0]!r}?" if match else f"known keys: {', '.join(known)}"
    return PydanticCustomError(
        "backend_setting",
        "unknown key on a {name} {what} ({hint})",
        {"name": name, "what": what, "hint": hint},
    )


class WithSettings(CoreModel):
    """A file whose keys beyond its own fields are its backend's `settings` (a host file's
    its runtime's, gateway.yaml's its kind's): `SETTINGS_TAG` is the key naming the backend
    and the backend it names when absent, `SETTINGS_MODELS` the registry of each backend's
    model, `SETTINGS_OF` what the file is in an error (`a setting of compose hosts`)."""

    SETTINGS_TAG: ClassVar[tuple[str, str]]
    SETTINGS_MODELS: ClassVar[Mapping[str, type[CoreModel]]]
    SETTINGS_OF: ClassVar[str]

    @model_validator(mode="before")
    @classmethod
    def _backend_settings(cls, data: Any) -> Any:
        neutral = set(cls.model_fields) - {"settings"}
        return with_settings(data, neutral, cls.SETTINGS_MODELS, cls.SETTINGS_OF, cls.SETTINGS_TAG)

    @classmethod
    def known_backend(cls, value: str) -> str:
        """`value` of the tag key, if a backend registered it (for the tag's validator)."""
        if value not in cls.SETTINGS_MODELS:
            raise unknown_runtime(value, cls.SETTINGS_MODELS)
        return value
