"""`fleet status` as text for a terminal: one screen of the fleet.

Pure: `render_text(status)` is the plain text `fleet status` prints (and `--watch` redraws
in place). Per host and GPU a memory bar and the seats on it as a table; then the
gateway's aliases, its clients, the open findings. Every string a host or the gateway
returned is printed with its control characters replaced (`printable`): a model name or
a log line cannot move the cursor or colour the terminal.
"""

from __future__ import annotations

import re

from fleet.report.status import FleetStatus, GpuStatus, HostStatus, SeatStatus

BAR = 24
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
COLUMNS: tuple[str, ...] = ("seat", "state", "port", "run", "wait", "kv use")
COLUMNS += ("concurrency (band)", "bench (vs baseline)", "aliases")


def printable(text: object) -> str:
    """The text with every control character (escape sequences too) as `?`."""
    return _CONTROL.sub("?", str(text))


def render_text(status: FleetStatus) -> str:
    """The whole status as lines of text."""
    lines = [_headline(status), _pending(status), ""]
    for host in status.hosts:
        lines += [*_host(host), ""]
    lines += [*_aliases(status), "", *_clients(status), "", *_findings(status)]
    return "\n".join(lines) + "\n"


def _short(commit: str | None) -> str:
    return (commit or "-")[:12]


def _headline(status: FleetStatus) -> str:
    return (
        f"{printable(status.fleet)}  desired {_short(status.desired_commit)}  "
        f"live {_short(status.live_commit)}  last apply {status.last_apply or '-'}  "
        f"observed {status.observed_at}"
    )


def _pending(status: FleetStatus) -> str:
    if not status.pending and not status.drift:
        return "in sync: nothing pending"
    parts = [f"{len(status.pending)} pending: " + printable("; ".join(status.pending[:5]))]
    if status.drift:
        parts.append(f"{len(status.drift)} drifted from the inventory")
    return " | ".join(parts)


def _host(host: HostStatus) -> list[str]:
    name = printable(host.name)
    if not host.reachable:
        return [f"{name}: unreachable ({printable(host.error or '')})"]
    lines = [
        f"{name}" + (f"  (applied {_short(host.applied_commit)})" if host.applied_commit else "")
    ]
    placed: set[str] = set()
    for gpu in host.gpus:
        on = [s for s in host.seats if s.gpus and s.gpus[0] == gpu.index]
        placed |= {s.seat for s in on}
        if not on and gpu.seats:  # a tensor-parallel seat, listed under its first GPU
            lines += ["  " + _gpu_line(gpu), f"    {printable(', '.join(gpu.seats))} (above)"]
            continue
        lines += ["  " + _gpu_line(gpu), *_table(on)]
    rest = [s for s in host.seats if s.seat not in placed]
    if rest:
        lines += ["  no GPU", *_table(rest)]
    return lines


def _gpu_line(gpu: GpuStatus) -> str:
    total, used = gpu.memory_total_mib, gpu.memory_used_mib
    filled = round(BAR * used / total) if total else 0
    bar = "#" * min(filled, BAR) + "." * (BAR - min(filled, BAR))
    share = f"{used / total:.0%}" if total else "?"
    return (
        f"GPU {gpu.index} {printable(gpu.name)} [{bar}] "
        f"{used / 1024:.1f}/{total / 1024:.1f} GiB {share}"
    )


def _table(seats: list[SeatStatus]) -> list[str]:
    if not seats:
        return ["    (no seat)"]
    rows = [COLUMNS, *(_row(s) for s in seats)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    return [
        "    " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
        for r in rows
    ]


def _row(seat: SeatStatus) -> tuple[str, ...]:
    mark = "" if seat.in_sync else " *"
    return (
        printable(seat.seat) + mark,
        printable(seat.state),
        str(seat.port) if seat.port is not None else "-",
        _count(seat.running),
        _count(seat.waiting),
        f"{seat.kv_usage:.0%}" if seat.kv_usage is not None else "-",
        _concurrency(seat),
        _bench(seat),
        printable(", ".join(seat.aliases)) or "-",
    )


def _count(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _concurrency(seat: SeatStatus) -> str:
    if seat.concurrency is None:
        return "-"
    band = f" ({seat.band[0]:g}..{seat.band[1]:g})" if seat.band else ""
    outside = "" if seat.in_band in (True, None) else " OUT"
    return f"{seat.concurrency:.2f}x{band}{outside}"


def _bench(seat: SeatStatus) -> str:
    bench = seat.bench
    if bench is None or bench.decode_tok_s is None:
        return "-"
    ratio = f" {bench.ratio:.2f}x" if bench.ratio is not None else ""
    stale = " stale" if bench.stale else ""
    return f"{bench.decode_tok_s:.1f} tok/s{ratio} {bench.level}{stale}"


def _aliases(status: FleetStatus) -> list[str]:
    if not status.aliases:
        return ["aliases: none (no gateway config read)"]
    lines = ["aliases:"]
    for row in status.aliases:
        answers = {True: "answers", False: "DEAD", None: "not probed"}[row.answers]
        target = row.seat or row.api_base or "-"
        lines.append(f"  {printable(row.alias)} -> {printable(target)} ({answers})")
    return lines


def _clients(status: FleetStatus) -> list[str]:
    if not status.clients:
        return ["clients: none declared"]
    return ["clients:"] + [
        f"  {printable(c.name)}: {_client_aliases(c.aliases)} (key at {printable(c.where)}:"
        f" {c.delivered}, {c.keys} at the gateway)"
        for c in status.clients
    ]


def _client_aliases(aliases: tuple[str, ...]) -> str:
    return "every alias" if aliases in ((), ("*",)) else printable(", ".join(aliases))


def _findings(status: FleetStatus) -> list[str]:
    if not status.findings:
        return ["findings: none"]
    return [f"findings ({len(status.findings)}):"] + [
        f"  {f.severity.value} {f.kind.value} {printable(f.target)}: {printable(f.message)}"
        for f in status.findings
    ]
