"""Text clean-up and number parsing shared by the fact parsers.

Command output reaches the parsers as it was captured: terminal colours (ANSI escape
sequences), carriage returns from progress bars redrawing a line, thousands separators in
numbers. Every parser in `fleet.facts` cleans its input with `clean_lines` first and reads
numbers with `to_int` / `to_float`, which return None instead of raising. JSON config
files (config.json, hf_quant_config.json) are read with `json_object`, their fields with
`first_int` / `first_str`.
"""

from __future__ import annotations

import ast
import json
import re
import threading
from collections.abc import Iterable, Mapping

# CSI sequences: colours (`ESC[1;36m`) and the cursor moves tqdm emits (`ESC[A`, `ESC[K`).
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
# A number longer than this is garbage, not a fact (and int() refuses > 4300 digits).
_MAX_DIGITS = 40


def strip_ansi(text: str) -> str:
    """The text without ANSI escape sequences."""
    return _ANSI.sub("", text)


def clean_lines(text: str) -> list[str]:
    """Lines without colours or trailing whitespace; a carriage return ends a line.

    A progress bar redrawn with `\\r` and a log line glued after it become separate lines.
    """
    return [line.rstrip() for line in strip_ansi(text).splitlines()]


def record_first(
    line: str, patterns: Iterable[tuple[str, re.Pattern[str]]], found: dict[str, str]
) -> None:
    """For each key not yet in `found` whose pattern the line matches, record the first
    group the match captured: the first value a log states is the fact."""
    for key, pattern in patterns:
        if key not in found and (match := pattern.search(line)):
            found[key] = next((g for g in match.groups() if g is not None), match.group(0))


def to_int(text: str | None) -> int | None:
    """`'2,640,144'` -> 2640144; None for anything that is not a plain integer."""
    if text is None:
        return None
    digits = text.strip().replace(",", "")
    if not re.fullmatch(r"[+-]?\d+", digits) or len(digits) > _MAX_DIGITS:
        return None
    return int(digits)


def to_float(text: str | None) -> float | None:
    """`'15.3916'` -> 15.3916; None for anything that is not a finite decimal number."""
    if text is None:
        return None
    digits = text.strip().replace(",", "")
    if not re.fullmatch(r"[+-]?(\d+(\.\d*)?|\.\d+)", digits) or len(digits) > _MAX_DIGITS:
        return None
    return float(digits)


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split at `sep` outside brackets and quotes: `a=1, b=(2, 3)` -> `['a=1', ' b=(2, 3)']`.

    Tolerates unbalanced input (a truncated line): whatever is left is the last item.
    """
    items: list[str] = []
    depth, quote, start = 0, "", 0
    for pos, char in enumerate(text):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(0, depth - 1)
        elif char == sep and depth == 0:
            items.append(text[start:pos])
            start = pos + 1
    items.append(text[start:])
    return [item for item in items if item.strip()]


# CPython (3.11 here) keeps the AST constructor's recursion depth per interpreter, not per
# thread: when a garbage collection inside one thread's parse lets another thread parse,
# the first fails with "SystemError: AST constructor recursion depth mismatch" (seen in
# `observe_fleet`, which reads each host's engine logs in its own thread; cf.
# python/cpython#106905). One parse at a time.
_AST_LOCK = threading.Lock()


def literal(text: str) -> object:
    """A Python or JSON literal as a value (`'x'`, `None`, `[1, 2]`, `true`), else the text."""
    stripped = text.strip()
    try:
        with _AST_LOCK:
            return ast.literal_eval(stripped)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    try:
        return json.loads(stripped)
    except (ValueError, RecursionError):
        return stripped


def parse_assignments(text: str) -> dict[str, object]:
    """`model='x', max_seq_len=8192, quantization=None` -> a dict of literal values.

    The format of a Python object's repr of its fields (an engine's config or parsed args
    as its log prints them).
    """
    result: dict[str, object] = {}
    for item in split_top_level(text):
        key, sep, value = item.partition("=")
        key = key.strip()
        if sep and re.fullmatch(r"[A-Za-z_]\w*", key):
            result.setdefault(key, literal(value))
    return result


def parse_dict_literal(text: str) -> dict[str, object]:
    """`{'model': 'x', 'port': 8001}` -> a dict, item by item, so one odd value spoils nothing.

    An engine's log may mix Python literals with JSON (`null`, `true`) inside nested values
    of such a dict, which defeats a whole-line `ast.literal_eval`.
    """
    body = text.strip()
    if body.startswith("{"):
        body = body[1:]
    if body.endswith("}"):
        body = body[:-1]
    result: dict[str, object] = {}
    for item in split_top_level(body):
        key_text, sep, value = item.partition(":")
        key = literal(key_text)
        if sep and isinstance(key, str):
            result.setdefault(key, literal(value))
    return result


def json_object(text: str) -> dict[str, object]:
    """The JSON object in the text, or an empty dict."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def first_int(config: Mapping[str, object], *keys: str) -> int | None:
    """The first key holding a positive int (bools are not ints here)."""
    for key in keys:
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def first_str(config: Mapping[str, object], *keys: str) -> str | None:
    """The first key holding a non-empty string."""
    for key in keys:
        value = config.get(key)
        if isinstance(value, str) and value:
            return value
    return None
