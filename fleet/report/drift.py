"""Drift a reviewer can read: one line per seat, alias or GPU that changed between the
committed inventory and the live one.

Called by `fleet plan` and `fleet check` (and their `--json`) before, or instead of, the
unified diff of the two Markdown documents (`--diff`). Both sides are `Inventory` data:
the committed side is the JSON twin read from Git. Lines are sorted, so the summary
diffs cleanly itself.
"""

from __future__ import annotations

import json

from pydantic import ValidationError

from fleet.report.inventory import AliasRow, GpuRow, Inventory, SeatRow

SEAT_FIELDS = ("state", "model", "image", "gpus", "context", "kv_cache_tokens", "port")


def read_inventory_json(text: str | None) -> Inventory | None:
    """A committed inventory's JSON twin; None when absent or not one."""
    if not text:
        return None
    try:
        return Inventory.model_validate(json.loads(text))
    except (ValueError, ValidationError, RecursionError):
        return None


def drift_summary(committed: Inventory, live: Inventory) -> tuple[str, ...]:
    """`seat coder on tower: running -> exited`, `alias flash: answers -> dead`, ..."""
    lines = _seat_lines(committed, live) + _gpu_lines(committed, live)
    lines += _alias_lines(committed, live)
    return tuple(sorted(lines))


def _seats(inventory: Inventory) -> dict[str, tuple[str, SeatRow]]:
    return {row.seat: (host.name, row) for host in inventory.hosts for row in host.seats}


def _seat_lines(committed: Inventory, live: Inventory) -> list[str]:
    before, after = _seats(committed), _seats(live)
    lines = [f"seat {name} on {before[name][0]}: gone" for name in before.keys() - after.keys()]
    lines += [f"seat {name} on {after[name][0]}: new" for name in after.keys() - before.keys()]
    for name in before.keys() & after.keys():
        (old_host, old), (new_host, new) = before[name], after[name]
        if old_host != new_host:
            lines.append(f"seat {name}: moved {old_host} -> {new_host}")
        for field in SEAT_FIELDS:
            was, now = getattr(old, field), getattr(new, field)
            if was != now:
                lines.append(f"seat {name} on {new_host}: {_field(field, was, now)}")
    return lines


def _field(field: str, was: object, now: object) -> str:
    if field == "state":
        return f"{was} -> {now}"
    return f"{field.replace('_', ' ')} {_value(was)} -> {_value(now)}"


def _value(value: object) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, tuple | list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return "none" if value is None else str(value)


def _gpus(inventory: Inventory) -> dict[tuple[str, int], GpuRow]:
    return {(host.name, gpu.index): gpu for host in inventory.hosts for gpu in host.gpus}


def _gpu_lines(committed: Inventory, live: Inventory) -> list[str]:
    before, after = _gpus(committed), _gpus(live)
    lines = []
    for key in sorted(before.keys() | after.keys()):
        host, index = key
        old, new = before.get(key), after.get(key)
        if old is None or new is None:
            lines.append(f"GPU {index} on {host}: {'new' if old is None else 'gone'}")
        elif old.memory_used_mib != new.memory_used_mib:
            lines.append(
                f"GPU {index} on {host}: {old.memory_used_mib:,} -> "
                f"{new.memory_used_mib:,} MiB used"
            )
    return lines


def _answer(row: AliasRow) -> str:
    return "unknown" if row.answers is None else "answers" if row.answers else "dead"


def _alias_lines(committed: Inventory, live: Inventory) -> list[str]:
    before = {row.alias: row for row in committed.aliases}
    after = {row.alias: row for row in live.aliases}
    lines = [f"alias {name}: gone" for name in before.keys() - after.keys()]
    lines += [
        f"alias {name}: new, routes to {after[name].api_base}"
        for name in after.keys() - before.keys()
    ]
    for name in before.keys() & after.keys():
        old, new = before[name], after[name]
        if _answer(old) != _answer(new):
            lines.append(f"alias {name}: {_answer(old)} -> {_answer(new)}")
        if old.api_base != new.api_base:
            lines.append(f"alias {name}: routes {old.api_base} -> {new.api_base}")
    return lines
