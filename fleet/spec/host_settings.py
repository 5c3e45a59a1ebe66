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
`fleet.gateways.litellm.settings`), and a seat file too: `engine:` chooses the model of
its KV-budget keys (`fleet.spec.seat_budget`). All three are a `WithSettings`: one
validator reads the other keys, whichever the backend.

The spec layer cannot import an engine, a runtime or a gateway kind: each owns its model
and its package's `register` adds it here, so desired/ is read once `fleet.engines`,
`fleet.runtimes` and `fleet.gateways` are imported (the command line and the workflows
import them; a model built before reads a backend's key as an unknown key).
"""

import difflib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, ClassVar, Self

from pydantic import ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from fleet.base import CoreModel

STATE_DIR = "/srv/fleet"  # where fleet keeps its apply lock and journal, unless told


class BackendSettings(CoreModel):
    """The keys of a file that its backend owns (a runtime's of a host file, a gateway
    kind's of gateway.yaml, an engine's of a seat file). `REFUSED` says, for a key another
    backend takes, why this one does not (the error then is that sentence, which names the
    key); any other key of another backend is `a setting of <them>, not of this <it>`."""

    REFUSED: ClassVar[Mapping[str, str]] = {}


class RuntimeSettings(BackendSettings):
    """The settings of a host's runtime (a runtime's subclass; this one has none)."""

    def default_state_dir(self) -> str:
        """Where fleet keeps its apply lock and journal on such a host, unless told."""
        return STATE_DIR


RUNTIME_SETTINGS: dict[str, type[RuntimeSettings]] = {}
"""Each runtime's settings model, by the runtime's name (`runtime:` of a host file), as
`fleet.runtimes.register` adds it (the built-in ones when `fleet.runtimes` is imported)."""


class KindSettings(BackendSettings):
    """The settings of a gateway kind, read from gateway.yaml's other keys (a kind's
    subclass; this one has none)."""

    def named_aliases(self) -> Iterator[tuple[str, str]]:
        """(key, alias) for each alias a setting names, which must be a seat's."""
        return iter(())


KIND_SETTINGS: dict[str, type[KindSettings]] = {}
"""Each gateway kind's settings model, by the kind's name (`kind:` of gateway.yaml), as
`fleet.gateways.register` adds it (the built-in one when `fleet.gateways` is imported)."""


def default_settings(
    models: Mapping[str, type[BackendSettings]], name: str, base: type[BackendSettings]
) -> Any:
    """The settings of a file that names no backend: its default backend's defaults, or
    the `base` model's where that backend is not registered (a model built before its
    package was imported: a host file's neutral keys still read; a backend's key is then an
    unknown key)."""
    return models[name]() if name in models else base()


def settings_schema(models: Mapping[str, type[BackendSettings]], what: str) -> Any:
    """A JSON-schema hook adding each backend's own keys to a file's schema (described as
    its backends'), so `fleet schema` shows the keys users write beside the neutral ones."""

    def add(schema: dict[str, Any]) -> None:
        specs: dict[str, dict[str, Any]] = {}
        owners: dict[str, list[str]] = {}
        for name, model in sorted(models.items()):
            for key, spec in model.model_json_schema().get("properties", {}).items():
                specs.setdefault(key, dict(spec))
                owners.setdefault(key, []).append(name)
        properties = schema.setdefault("properties", {})
        for key, spec in specs.items():
            told = spec.get("description", "")
            spec["description"] = f"{what} {' and '.join(owners[key])} only: {told}"
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


class WithSettings(CoreModel):
    """A file whose keys beyond its own fields are its backend's (a host file's its
    runtime's, gateway.yaml's its kind's, a seat file's its engine's), read into the field
    `SETTINGS_FIELD` by the model the backend registered, as a pydantic discriminated union
    on `SETTINGS_TAG` would (the key naming the backend, and the backend it names when
    absent) but open to backends registered later. `SETTINGS_MODELS` is the registry of each
    backend's model, `SETTINGS_OF` what the file is in an error (`a setting of compose
    hosts`). A key no backend takes is the backend's to judge (`unknown key on a compose
    host`), or with `SETTINGS_TAKE_UNKNOWN` off the file's own (`unknown key 'x'`)."""

    SETTINGS_TAG: ClassVar[tuple[str, str]]
    SETTINGS_MODELS: ClassVar[Mapping[str, type[BackendSettings]]]
    SETTINGS_OF: ClassVar[str]
    SETTINGS_FIELD: ClassVar[str] = "settings"
    SETTINGS_TAKE_UNKNOWN: ClassVar[bool] = True

    @model_validator(mode="before")
    @classmethod
    def _backend_settings(cls, data: Any) -> Any:
        """The file's data with its backend's keys read into `SETTINGS_FIELD`."""
        field = cls.SETTINGS_FIELD
        if not isinstance(data, dict) or isinstance(data.get(field), CoreModel):
            return data
        neutral = cls.neutral_keys()
        own = {k: v for k, v in data.items() if k in neutral}
        name = own.get(*cls.SETTINGS_TAG)
        if isinstance(name, str) and name in cls.SETTINGS_MODELS:
            given = data.get(field)
            theirs = cls.backend_keys()
            others = {
                k: v
                for k, v in data.items()
                if k not in neutral and k != field and (cls.SETTINGS_TAKE_UNKNOWN or k in theirs)
            }
            own.update({k: v for k, v in data.items() if k not in neutral and k not in others})
            keys = {**(given if isinstance(given, dict) else {}), **others}
            own[field] = cls._read_settings(name, keys)
        elif cls.SETTINGS_TAG[0] not in own or not cls.SETTINGS_MODELS:  # none to read them
            own.update({k: v for k, v in data.items() if k not in neutral})
        return own

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with `update` applied; a key of the backend's settings (`kv_cache_bytes`
        of a vLLM seat) updates them, as it would have been read from the file."""
        field = self.SETTINGS_FIELD
        settings = getattr(self, field)
        theirs = {
            k: v
            for k, v in (update or {}).items()
            if k not in type(self).model_fields and k in type(settings).model_fields
        }
        if theirs:
            update = {k: v for k, v in (update or {}).items() if k not in theirs}
            update[field] = settings.model_copy(update=theirs)
        return super().model_copy(update=update, deep=deep)

    @classmethod
    def neutral_keys(cls) -> set[str]:
        """The file's own keys, whichever its backend."""
        return set(cls.model_fields) - {cls.SETTINGS_FIELD}

    @classmethod
    def backend_keys(cls) -> set[str]:
        """Every key some registered backend takes."""
        return {key for model in cls.SETTINGS_MODELS.values() for key in model.model_fields}

    @classmethod
    def known_backend(cls, value: str) -> str:
        """`value` of the tag key, if a backend registered it (for the tag's validator)."""
        if value not in cls.SETTINGS_MODELS:
            raise unknown_runtime(value, cls.SETTINGS_MODELS)
        return value

    @classmethod
    def _read_settings(cls, name: str, keys: dict[str, Any]) -> BackendSettings:
        """The settings of backend `name` from the file's keys; each key it does not take is
        an error at that key, naming the backend (and the one it belongs to), but for another
        backend's key left empty (`parallel: null` on a vLLM seat: as if not written)."""
        model = cls.SETTINGS_MODELS[name]
        theirs = cls.backend_keys() - set(model.model_fields)
        keys = {k: v for k, v in keys.items() if not (v is None and k in theirs)}
        errors = [
            InitErrorDetails(type=cls._not_its_setting(name, key), loc=(key,), input=value)
            for key, value in keys.items()
            if key not in model.model_fields
        ]
        if errors:
            raise ValidationError.from_exception_data(f"{cls.SETTINGS_OF} settings", errors)
        return model.model_validate(keys)

    @classmethod
    def _not_its_setting(cls, name: str, key: str) -> PydanticCustomError:
        models, what = cls.SETTINGS_MODELS, cls.SETTINGS_OF
        refused = models[name].REFUSED.get(key)
        if refused is not None:
            return PydanticCustomError("backend_refused", "{reason}", {"reason": refused})
        owners = sorted(n for n, m in models.items() if key in m.model_fields)
        if owners:
            return PydanticCustomError(
                "backend_setting",
                "a setting of {owners} {what}s, not of this {name} {what}",
                {"owners": " and ".join(owners), "name": name, "what": what},
            )
        known = sorted({*cls.neutral_keys(), *models[name].model_fields})
        match = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
        hint = f"did you mean {match[0]!r}?" if match else f"known keys: {', '.join(known)}"
        return PydanticCustomError(
            "backend_setting",
            "unknown key on a {name} {what} ({hint})",
            {"name": name, "what": what, "hint": hint},
        )
