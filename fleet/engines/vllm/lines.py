"""How the text of a vLLM log becomes messages: lines rejoined, headers and prefixes split off.

Used by `fleet.engines.vllm.log` before it looks for any fact. A vLLM line reads
`(EngineCore pid=7) INFO 12-01 10:00:00 [file.py:12] message`: zero or more process
prefixes, a header with the level, then the message. Two things stand between the captured
text and those lines:

- Hard wrapping. A terminal or log collector that wraps at a fixed width (80, 120, ...)
  cuts a long line into pieces, each exactly that wide but the last, and the pieces after
  the first carry no header or prefix. Such a piece is glued back onto the line before it
  when that line is exactly a wrap width long. The widths are read off the log itself: the
  widest line, if at least two lines of that width run on into a header-less line; and,
  for collectors that cut a line's first piece shorter than the rest (a real wrapped
  0.10.1.1 log, SOURCES.md: 136 characters, then 147), the widest line that has a header
  or prefix, on the same evidence. A log without that evidence is never rejoined, and a
  line that has a header or starts with a process prefix (every traceback line in a
  multi-process log does) is never glued on.
- Worker prefixes. `rank_of` reads the rank a prefix names: `(VllmWorker rank=2 pid=9)`
  and, since 0.11, `(Worker_PP1_TP0 pid=9)`; a V0 `(VllmWorkerProcess pid=9)` names none,
  so `worker_key` tells such workers apart by the prefix itself, and `in_rank_order` lists
  per-worker figures by rank, the unranked ones after them in the order they logged.
"""

from __future__ import annotations

import re
from typing import NamedTuple, TypeAlias

from fleet.facts._text import strip_ansi, to_int

_HEADER = re.compile(
    r"\b(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? "
    r"\[?[\w.\-]+\.py:\d+\] ?"
)
_PREFIX = re.compile(r"^(?:\([A-Za-z][^()]*?pid=\d+[^()]*\)\s*)+")
_REPEATED = re.compile(r"\[repeated \d+x across cluster\]$")  # the space before: strip()
_RANK_TAG = re.compile(r"_(DP|PP|PCP|TP|DCP)(\d+)|\brank=(\d+)")
_RANK_ORDER = ("DP", "PP", "PCP", "TP", "DCP", "rank")
WorkerKey: TypeAlias = tuple[int, ...] | str
# Narrower than any header line: below this a "wrap" would cut headers apart.
MIN_WRAP_WIDTH = 40


class Message(NamedTuple):
    """One log line: its level (None without a header), process prefix and message."""

    level: str | None
    prefix: str
    text: str


def log_lines(text: str) -> list[str]:
    """The log's lines without colours or trailing blanks, hard-wrapped lines rejoined."""
    return [line.rstrip() for line in unwrap(strip_ansi(text).splitlines())]


def unwrap(lines: list[str]) -> list[str]:
    """Glue the pieces of hard-wrapped lines back together (see the module docstring)."""
    starts = [_starts_line(line) for line in lines]
    widths = _wrap_widths(lines, starts)
    if widths is None:
        return lines
    first, full = widths
    joined = lines[:1]
    for i in range(1, len(lines)):
        before = len(lines[i - 1])
        piece_was_full = before == full or (before == first and starts[i - 1])
        if piece_was_full and not starts[i]:
            joined[-1] += lines[i]
        else:
            joined.append(lines[i])
    return joined


def _wrap_widths(lines: list[str], starts: list[bool]) -> tuple[int, int] | None:
    """(first-piece width, width) of a hard-wrapped log, or None if it shows no wrapping.

    `starts[i]` says whether `lines[i]` opens a log line (has a header or a prefix).
    """
    if not lines:
        return None
    run_on = [i for i in range(len(lines) - 1) if not starts[i + 1]]
    full = max(len(line) for line in lines)
    if full < MIN_WRAP_WIDTH or sum(len(lines[i]) == full for i in run_on) < 2:
        return None
    first = max(
        (len(line) for line, start in zip(lines, starts, strict=True) if start), default=full
    )
    if first < MIN_WRAP_WIDTH or sum(len(lines[i]) == first and starts[i] for i in run_on) < 2:
        first = full
    return first, full


def _starts_line(line: str) -> bool:
    """Whether the line opens a log line: it has a vLLM header or a process prefix."""
    return bool(_PREFIX.match(line) or _HEADER.search(line))


def messages(lines: list[str]) -> list[Message]:
    """Each line split into level, prefix and message (Ray's repeat suffix dropped)."""
    result: list[Message] = []
    for line in lines:
        header = _HEADER.search(line)
        if header:
            level: str | None = header.group("level")
            prefix, text = line[: header.start()], line[header.end() :]
        else:
            stripped = line.strip()
            found = _PREFIX.match(stripped)
            level, prefix = None, found.group(0) if found else ""
            text = stripped[len(prefix) :]
        result.append(Message(level, prefix.strip(), _REPEATED.sub("", text).strip()))
    return result


def rank_of(prefix: str) -> tuple[int, ...] | None:
    """The rank a worker prefix names, as a sort key in rank order; None if it names none."""
    tags: dict[str, int] = {}
    for match in _RANK_TAG.finditer(prefix):
        number = to_int(match.group(2) or match.group(3))
        if number is not None:
            tags[match.group(1) or "rank"] = number
    if not tags:
        return None
    return tuple(tags.get(name, 0) for name in _RANK_ORDER)


def worker_key(prefix: str) -> WorkerKey:
    """The worker a prefix stands for: the rank it names, else the prefix itself."""
    return rank_of(prefix) or prefix


def in_rank_order(by_worker: dict[WorkerKey, float]) -> tuple[float, ...]:
    """Per-worker figures, ranked workers by rank, then the others in the order logged."""
    ranked = sorted((key, value) for key, value in by_worker.items() if isinstance(key, tuple))
    others = [value for key, value in by_worker.items() if isinstance(key, str)]
    return tuple(value for _, value in ranked) + tuple(others)
