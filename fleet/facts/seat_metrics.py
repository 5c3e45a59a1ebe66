"""The engines' own /metrics, read from each seat's host inside its fact script.

`fleet status` asks every host once: beside its other facts, the script fetches
`http://ADDRESS:PORT/metrics` of each port a seat of the host may serve on (its `port` and
its surge port: which one is live is known only once the facts are read), with `curl`,
else `python3` (a systemd host's minimal image has no curl), each bounded in time (3 s)
and in size (`METRICS_BYTES`). A port where nothing listens prints nothing. The text is
data: `process` keeps each port's text as printed (bounded), and
`fleet.observed.assemble` reads the engine's gauges out of it by the engine's own names
(`fleet.engines.engine_load`). Only `fleet status` and the dashboard add this fact, so
plan and inventory pay nothing for it.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable

from fleet.facts.script import Fact, Parts

METRICS_BYTES = 1 << 20  # an engine's /metrics is ~20-60 KB; more is cut, never read whole
SECONDS = 3
_PYTHON = (
    "import sys, urllib.request as u; "
    "sys.stdout.buffer.write(u.urlopen(sys.argv[1], timeout=float(sys.argv[2]))"
    ".read(int(sys.argv[3])))"
)


def _fetch(url: str) -> str:
    """One bounded GET of `url` to stdout: curl where the host has it, else python3."""
    quoted = shlex.quote(url)
    curl = f"curl -fsS --max-time {SECONDS} {quoted} 2>/dev/null | head -c {METRICS_BYTES}"
    python = f"python3 -c {shlex.quote(_PYTHON)} {quoted} {SECONDS} {METRICS_BYTES} 2>/dev/null"
    return (
        "if command -v curl >/dev/null 2>&1; then "
        f"{curl}; elif command -v python3 >/dev/null 2>&1; then {python}; fi"
    )


def _command(address: str, ports: Iterable[int]) -> str:
    lines = []
    for port in sorted({int(p) for p in ports}):
        lines.append(f"mark metrics {port}")
        lines.append(_fetch(f"http://{address}:{port}/metrics"))
    return "\n".join(lines) + "\n" if lines else ":\n"


def _process(parts: Parts) -> dict[int, str]:
    found: dict[int, str] = {}
    for arg, text in parts.get("metrics", {}).items():
        if arg.isdigit() and text.strip():
            found[int(arg)] = text[:METRICS_BYTES]
    return found


SEAT_METRICS: Fact[dict[int, str]] = Fact(
    name="seat-metrics",
    command=_command,
    sections=("metrics",),
    process=_process,
    default={},
)


def metrics_address(publish_address: str) -> str:
    """Where a seat's port answers from its own host: its publish address, or loopback
    where it binds every interface."""
    return "127.0.0.1" if publish_address in ("0.0.0.0", "") else publish_address
