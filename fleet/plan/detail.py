"""Changes a reviewer reads key by key: engine flags in `extra_args`, and the keys of a
compose service (environment variables, mounts, the health check) that only the
spec-hash label would otherwise tell apart.

Called by `fleet.plan.diff`. Secret values (flags such as `--api-key`, environment
variables whose name says secret) are shown as `***`; `${VAR}` references are shown as
written, since they hold no secret.
"""

from __future__ import annotations

import json
from typing import Any

from fleet.secrets import REFERENCE, SECRET_FLAG, SECRET_KEY_NAMES

ABSENT = "(absent)"
SET = "(set)"
# Keys whose changes other fields already show (engine flags, image) or that never differ.
COVERED = frozenset({"image", "entrypoint", "command", "labels"})


def flags(args: list[str]) -> dict[str, str]:
    """`--flag value` / `--flag=value` / a bare `--switch` -> {flag: value or (set)}."""
    found: dict[str, str] = {}
    position = 0
    while position < len(args):
        arg = args[position]
        name, equals, inline = arg.partition("=")
        if not name.startswith("-"):
            found[f"(argument {position})"] = arg
        elif equals:
            found[name] = inline
        elif position + 1 < len(args) and not args[position + 1].startswith("-"):
            found[name] = args[position + 1]
            position += 1
        else:
            found[name] = SET
        position += 1
    return found


def flag_changes(old: list[str], new: list[str]) -> list[tuple[str, str, str]]:
    """(`extra_args --flag`, old, new) for each flag that differs, secrets masked."""
    before, after = flags(old), flags(new)
    changes = []
    for name in sorted(before.keys() | after.keys()):
        was, now = before.get(name, ABSENT), after.get(name, ABSENT)
        if was != now:
            hide = SECRET_FLAG.match(name) is not None
            changes.append((f"extra_args {name}", _mask(was, hide), _mask(now, hide)))
    return changes


def service_changes(
    old: dict[str, Any] | None, new: dict[str, Any] | None
) -> list[tuple[str, str, str]]:
    """(`env NAME` or `service KEY`, old, new) for each compose key that differs."""
    if old is None or new is None:
        return []
    changes = _env_changes(old.get("environment") or {}, new.get("environment") or {})
    for key in sorted((old.keys() | new.keys()) - COVERED - {"environment"}):
        was, now = old.get(key), new.get(key)
        if was != now:
            changes.append((f"service {key}", _text(was), _text(now)))
    return changes


def _env_changes(old: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, str, str]]:
    changes = []
    for name in sorted(old.keys() | new.keys()):
        was, now = old.get(name), new.get(name)
        if was != now:
            hide = SECRET_KEY_NAMES.search(name) is not None
            changes.append((f"env {name}", _env_value(was, hide), _env_value(now, hide)))
    return changes


def _env_value(value: Any, hide: bool) -> str:
    if value is None:
        return ABSENT
    return _mask(str(value), hide)


def _mask(value: str, hide: bool) -> str:
    if not hide or value in (ABSENT, SET) or REFERENCE.match(value):
        return value
    return "***"


def _text(value: Any) -> str:
    if value is None:
        return ABSENT
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)
